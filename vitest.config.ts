import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // PGlite is one in-process connection per app; files run in parallel workers, tests in a file in order.
    pool: 'forks',
    maxWorkers: 2,
  },
});
