/**
 * The benchmark harness's shared types and helpers.
 *
 * A scenario is a module in bench/scenarios/ whose default export is a `Scenario`:
 *
 *   import type { Scenario } from '../lib.js';
 *   export default {
 *     name: 'my-scenario',                       // what `npm run bench -- my-scenario` selects
 *     description: 'One line for the report.',
 *     async run(ctx) {                           // called once per backend, with a fresh app and database
 *       const t = await ctx.time(() => ctx.gql('{ sessions(first: 1) { totalCount } }'));
 *       return [{ metric: 'list.ms', value: t.ms, unit: 'ms', target: { op: '<', value: 5 } }];
 *     },
 *   } satisfies Scenario;
 *
 * `run` returns measurement rows; the runner adds the scenario name, the backend and pass/fail
 * against each row's target, and merges them into bench/results.json and bench/results.md.
 * Files whose name starts with `_` are not scenarios (put shared helpers there).
 */
import type { App } from '../src/app.js';
import type { Proc } from './proc.js';

export type BackendKind = 'pglite' | 'postgres';

/** A target a measured value must meet, e.g. `{ op: '<', value: 1.5 }`. */
export interface Target {
  op: '<' | '<=' | '>' | '>=';
  value: number;
}

/** One measurement a scenario reports. */
export interface Row {
  /** Dotted name, unique within the scenario, e.g. `fork.median.100k`. */
  metric: string;
  value: number;
  /** `ms`, `queries`, `ratio`, `rows`, `s` … */
  unit: string;
  /** Omit (or null) for figures reported without a target. */
  target?: Target | null;
  /** A short remark shown in the Markdown table. */
  note?: string;
}

/** A row as stored in results.json. */
export interface ResultRow {
  scenario: string;
  backend: BackendKind;
  metric: string;
  value: number;
  unit: string;
  /** The target as text, e.g. "< 1.5"; null when none. */
  target: string | null;
  /** Whether the value meets the target; null when there is no target. */
  pass: boolean | null;
  note: string | null;
  /** When the scenario ran (ISO 8601). */
  at: string;
  /**
   * Absent on a normal run (every deviation on, the server as deployed). `off` on a run of
   * `--deviations=off` (`NO_DEVIATIONS`), `off:httpFastPath,queryJit` when only those were off: such
   * rows are kept beside the normal row of the same scenario, backend and metric, not in its place.
   */
  deviations?: string;
}

export interface BenchContext {
  backend: BackendKind;
  /** `--smoke`: small sizes, one short round (only scenarios with `smoke: true` run in a smoke run). */
  smoke: boolean;
  /** Rounds per measurement (`--rounds`, 3 by default, 1 in smoke mode). */
  rounds: number;
  /** A fresh app on a fresh, empty database of this backend (in-memory pub/sub, no API keys). */
  app: App;
  /** The default workspace's id (the app runs keyless). */
  workspaceId: string;
  /** Runs a GraphQL operation in process (`yoga.fetch`); throws on any GraphQL error. */
  // biome-ignore lint/suspicious/noExplicitAny: scenarios read untyped response data by path
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<T>;
  /** Times one call. */
  time<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }>;
  /** Counts the SQL statements `fn` sends (the app's QueryCounter); returns them too. */
  countQueries<T>(fn: () => Promise<T>): Promise<{ count: number; statements: string[]; result: T }>;
  /**
   * Creates a root session through GraphQL and inserts `messages` rows straight into the table in
   * one SQL statement (USER at even positions, ASSISTANT at odd, `tokens` tokens each), fast
   * enough for 100,000 rows, then runs ANALYZE unless `analyze: false`. Returns the session's
   * global ID and database id.
   */
  seedSession(options: {
    title: string;
    messages: number;
    tokens?: number;
    analyze?: boolean;
  }): Promise<{ id: string; rawId: string; messageCount: number }>;
  /**
   * A full garbage collection (when node runs with --expose-gc, as `npm run bench` does), so what a
   * scenario measures does not pay for collecting what its setup left behind.
   */
  collectGarbage(): void;
  /** Progress output (stderr). */
  log(message: string): void;
  /**
   * Another fresh app on another new, empty database of the same backend, disposed with this
   * scenario's: for a scenario that compares two databases of different sizes.
   */
  sibling(): Promise<BenchContext>;
}

/** An in-process scenario: gets a fresh app per backend and calls it through `yoga.fetch`. */
export interface InProcessScenario {
  name: string;
  description: string;
  mode?: 'in-process';
  /** Runs in a smoke run too (`--smoke`), at the small sizes `ctx.smoke` asks for. */
  smoke?: boolean;
  run(ctx: BenchContext): Promise<Row[]>;
}

/**
 * A scenario over real sockets: the server under test, its baseline and the load each run as their
 * own process (bench/proc.ts); the runner builds dist/ first and stops whatever a scenario started.
 */
export interface ProcessScenario {
  name: string;
  description: string;
  mode: 'process';
  run(ctx: ProcessContext): Promise<Row[]>;
}

export type Scenario = InProcessScenario | ProcessScenario;

/** A database for server processes: a new PostgreSQL database, or a new PGlite folder (migrated). */
export interface BenchDatabase {
  backend: BackendKind;
  /** PostgreSQL only. */
  url: string | null;
  /** PGlite only: the data folder. */
  dataDir: string | null;
  /** The environment a server (or a raw baseline) needs to open it. */
  env: Record<string, string>;
}

export interface ProcessContext {
  backend: BackendKind;
  /** `--smoke`: one short round, small sizes; checks that nothing crashes or loses deliveries. */
  smoke: boolean;
  /** Rounds per measurement (3, or 1 in smoke mode); figures are the median over rounds. */
  rounds: number;
  /** Seconds of the memory soak (`--soak=S`; 300 by default, a few in smoke mode). */
  soakSeconds: number;
  /** Redis for the fan-out and two-instance cases, or null when it does not answer. */
  redisUrl: string | null;
  /** A fresh database of this backend (PostgreSQL: created, dropped at the end; PGlite: a migrated folder). */
  database(): Promise<BenchDatabase>;
  /** A new empty PGlite folder (never migrated), for the start-up scenario. */
  emptyDataDir(): string;
  /**
   * Starts the server under test on `db`: `node dist/main.js` (what `npm start` runs) or, with
   * runtime 'tsx', `tsx src/main.ts`. Rate limiting off, logging at error level, a random port.
   */
  server(db: BenchDatabase, options?: { redis?: boolean; runtime?: 'dist' | 'tsx'; env?: Record<string, string> }): Promise<Proc>;
  /** The bare graphql-yoga `{ hello }` process (bench/servers/bare-yoga.mjs). */
  bareYoga(): Promise<Proc>;
  /** The raw relay / update + publish process (bench/servers/raw.mjs). */
  raw(env: Record<string, string>): Promise<Proc>;
  /** Runs the load process in one mode (bench/load/main.ts) and returns its result. */
  // biome-ignore lint/suspicious/noExplicitAny: load results are JSON
  load<T = any>(mode: string, args: unknown): Promise<T>;
  /** GraphQL over HTTP from the runner, for setup (not timed); throws on errors. */
  // biome-ignore lint/suspicious/noExplicitAny: scenarios read untyped response data by path
  gql<T = any>(url: string, query: string, variables?: Record<string, unknown>): Promise<T>;
  log(message: string): void;
}

/** The value at quantile q (0..1) of the samples, linear interpolation. */
export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export const median = (samples: number[]) => quantile(samples, 0.5);
export const p95 = (samples: number[]) => quantile(samples, 0.95);
export const p99 = (samples: number[]) => quantile(samples, 0.99);

export function meets(value: number, target: Target): boolean {
  switch (target.op) {
    case '<':
      return value < target.value;
    case '<=':
      return value <= target.value;
    case '>':
      return value > target.value;
    case '>=':
      return value >= target.value;
  }
}

export const round = (value: number, digits = 3) => Number(value.toFixed(digits));
