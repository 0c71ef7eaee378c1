/**
 * Scenario `startup`: time from spawn to the "listening" line and RSS then, for the server (compiled
 * dist/) on a new PGlite folder (initdb + migrations) and on the same folder again (migrated), and on
 * PostgreSQL on a new database; against a bare Yoga process. Medians over the rounds. Target: PGlite
 * on a migrated folder < 2 s.
 */
import type { BenchDatabase, ProcessScenario, Row } from '../lib.js';
import { median, round } from '../lib.js';

const MB = 2 ** 20;

const startup: ProcessScenario = {
  name: 'startup',
  mode: 'process',
  description: 'start-up time and RSS: PGlite new / migrated folder (or a new PostgreSQL database) vs a bare Yoga process',
  async run(ctx) {
    const fresh: { ms: number; rss: number }[] = [];
    const again: { ms: number; rss: number }[] = [];
    const bare: { ms: number; rss: number }[] = [];
    for (let r = 0; r < ctx.rounds; r++) {
      const db: BenchDatabase =
        ctx.backend === 'pglite'
          ? (() => {
              const dir = ctx.emptyDataDir();
              return { backend: 'pglite', url: null, dataDir: dir, env: { DATA_DIR: dir } };
            })()
          : await ctx.database();
      const first = await ctx.server(db);
      fresh.push({ ms: first.readyMs, rss: first.rss() });
      await first.stop();
      const second = await ctx.server(db);
      again.push({ ms: second.readyMs, rss: second.rss() });
      await second.stop();
      const yoga = await ctx.bareYoga();
      bare.push({ ms: yoga.readyMs, rss: yoga.rss() });
      await yoga.stop();
      ctx.log(
        `round ${r + 1}: new ${(fresh[r].ms / 1000).toFixed(2)} s ${(fresh[r].rss / MB).toFixed(0)} MB; again ${(again[r].ms / 1000).toFixed(2)} s ${(again[r].rss / MB).toFixed(0)} MB; bare Yoga ${(bare[r].ms / 1000).toFixed(2)} s`,
      );
    }
    const s = (xs: { ms: number }[]) => round(median(xs.map((x) => x.ms)) / 1000, 2);
    const m = (xs: { rss: number }[]) => round(median(xs.map((x) => x.rss)) / MB, 1);
    const what = ctx.backend === 'pglite' ? 'PGlite' : 'PostgreSQL';
    const rows: Row[] = [
      {
        metric: 'startup.new',
        value: s(fresh),
        unit: 's',
        note: ctx.backend === 'pglite' ? 'new PGlite folder (initdb + migrations)' : 'new PostgreSQL database (migrations)',
      },
      { metric: 'startup.new.rss', value: m(fresh), unit: 'MB' },
      {
        metric: 'startup.migrated',
        value: s(again),
        unit: 's',
        target: ctx.backend === 'pglite' ? { op: '<', value: 2 } : null,
        note: `${what}, already migrated`,
      },
      { metric: 'startup.migrated.rss', value: m(again), unit: 'MB' },
      { metric: 'startup.baseline', value: s(bare), unit: 's', note: 'bare Yoga process' },
      { metric: 'startup.baseline.rss', value: m(bare), unit: 'MB' },
      { metric: 'startup.migrated_vs_baseline', value: round(s(again) / Math.max(s(bare), 0.001), 2), unit: 'ratio' },
    ];
    return rows;
  },
};

export default startup;
