import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Everything, the tests tagged `program` included: on CI (CI=true, what .ci/run sets) and with
 * TEST_ALL=1 (`npm run test:all`). A newcomer's `npm test` skips those (see the tag below).
 */
const runAll = [process.env.CI, process.env.TEST_ALL].some((value) => !!value && value !== '0' && value !== 'false');

/**
 * Short files that run long (the process ones where they run: CI, test:all). Vitest starts the
 * files whose durations it has cached longest first, and the others (all of them, on a fresh
 * clone) largest first, which left these to the end: one worker ran them while the other was
 * done. They start first.
 */
const SHORT_BUT_SLOW = /\/(pglite-vacuum-parts|pglite-vacuum|tokens|provider-sdk-types|process|process-drain)\.test\.ts$/;

class ShortButSlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (file: TestSpecification) => SHORT_BUT_SLOW.test(file.moduleId);
    return [...sorted.filter(first), ...sorted.filter((file) => !first(file))];
  }
}

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS ("main") and ESM ("module"); Node loads the CJS one for the externalized
    // dependencies (Pothos, Yoga), so the transformed sources must use the same single copy.
    alias: [{ find: /^graphql$/, replacement: fileURLToPath(new URL('./node_modules/graphql/index.js', import.meta.url)) }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    sequence: { sequencer: ShortButSlowFirst },
    tags: [
      {
        name: 'program',
        description:
          'Starts a whole program: the server or a CLI as a process of its own (dist/ compiled first, as `npm start` does), or Chromium. Run on CI and by `npm run test:all` (TEST_ALL=1); skipped by a plain `npm test`.',
        skip: !runAll,
      },
    ],
    // One migrated PGlite database for the run, that every test app's database starts as a copy of.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // PGlite is one in-process connection per app; files run in parallel workers, tests in a file in order.
    pool: 'forks',
    maxWorkers: 2,
    // A worker runs file after file in one process, importing src, Yoga, Prisma and PGlite's compiled
    // Postgres once. Safe because src keeps no state between apps (its module-level maps are memos),
    // a closed app lets go of its database, and a test that changes a process global (TZ, a spy on
    // stdout) restores it.
    isolate: false,
  },
});
