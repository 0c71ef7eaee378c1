import { describeStreamedRewrites } from '../helpers/pglite-vacuum.js';

// A reply streamed by replacing its parts (a transaction per update); its sibling, pglite-vacuum.test.ts.
describeStreamedRewrites('parts');
