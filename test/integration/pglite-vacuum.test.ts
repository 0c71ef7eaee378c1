import { describeStreamedRewrites } from '../helpers/pglite-vacuum.js';

// A reply streamed by appendText (one statement per update); its sibling, pglite-vacuum-parts.test.ts.
describeStreamedRewrites('appendText');
