/**
 * `npm run bench [-- <scenario> …] [--backend=pglite|postgres] [--smoke] [--rounds=N] [--soak=SECONDS] [--deviations=off[:NAME,…]]`
 *
 * `--smoke` (CI): one short round of each scenario with small sizes, nothing written to bench/results.*;
 * exits non-zero only when a scenario crashes or a delivery/error count that must be 0 is not.
 * `--rounds=N` rounds per measurement (default 3); `--soak=S` length of the memory soak (default 300 s).
 * `--deviations=off` measures the server without its deviations from the obvious implementation
 * (`NO_DEVIATIONS`; `off:httpFastPath,queryJit` only those): the servers over sockets run
 * bench/servers/obvious.mjs instead of dist/main.js, the in-process apps get the same `deviations`,
 * and the rows are stored beside the normal ones, marked (`deviations` in results.json, a table of
 * their own in results.md), never in their place.
 * See bench/README.md for what each scenario measures and how to read the results.
 *
 * Runs the scenarios of bench/scenarios/ (all by default, or those named) on PGlite, and on
 * PostgreSQL when one answers: BENCH_DATABASE_URL, else postgres://root@127.0.0.1:5432/test if it
 * is reachable. Each scenario gets a fresh app on a fresh database per backend (on PostgreSQL a new
 * database, dropped afterwards). Results are merged into bench/results.json and bench/results.md:
 * the rows of the scenarios and backends that ran are replaced, every other row is kept.
 * See bench/lib.ts for the scenario interface.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { buildApp, type App, type Deviations, NO_DEVIATIONS } from '../src/app.js';
import { loadConfig, type AppConfig } from '../src/config.js';
import { createDatabase } from '../src/db/database.js';
import { parseGlobalId } from '../src/schema/ids.js';
import { Redis } from 'ioredis';
import {
  type BackendKind,
  type BenchContext,
  type BenchDatabase,
  meets,
  type ProcessContext,
  type ResultRow,
  type Row,
  type Scenario,
} from './lib.js';
import { type Proc, ROOT, runLoad, startProcess } from './proc.js';

const here = dirname(fileURLToPath(import.meta.url));
const RESULTS_JSON = join(here, 'results.json');
const RESULTS_MD = join(here, 'results.md');
const DEFAULT_POSTGRES = 'postgres://root@127.0.0.1:5432/test';
const DEFAULT_REDIS = 'redis://127.0.0.1:6379';

const log = (message: string) => process.stderr.write(`${message}\n`);
const startLoad = loadavg().map((l) => Number(l.toFixed(2)));

async function loadScenarios(): Promise<Scenario[]> {
  const dir = join(here, 'scenarios');
  const files = readdirSync(dir)
    .filter((f) => /\.(ts|js|mjs)$/.test(f) && !f.startsWith('_') && !f.endsWith('.d.ts'))
    .sort();
  const scenarios: Scenario[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default?: Scenario };
    const scenario = mod.default;
    if (!scenario || typeof scenario.run !== 'function' || !scenario.name) {
      throw new Error(`bench/scenarios/${file} must default-export { name, description, run(ctx) }`);
    }
    scenarios.push(scenario);
  }
  return scenarios;
}

/** The PostgreSQL server to use, or null: BENCH_DATABASE_URL, else the default one if it answers. */
async function findPostgres(): Promise<string | null> {
  const explicit = process.env.BENCH_DATABASE_URL?.trim();
  const url = explicit || DEFAULT_POSTGRES;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return url;
  } catch (error) {
    if (explicit) throw new Error(`BENCH_DATABASE_URL does not answer: ${(error as Error).message}`);
    log(`PostgreSQL at ${DEFAULT_POSTGRES} does not answer (${(error as Error).message}); PGlite only.`);
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

function config(databaseUrl: string | null): AppConfig {
  return {
    // The server's defaults, rate limiting off: a benchmark is one client sending as fast as it can.
    ...loadConfig({ RATE_LIMIT: '0' }),
    port: 0,
    host: '127.0.0.1',
    dataDir: 'memory://',
    databaseUrl,
    redisUrl: null,
    redisPrefix: `sgbench:${randomBytes(4).toString('hex')}:`,
    logLevel: 'silent',
    apiKeys: [],
  };
}

/**
 * Which deviations a run turns off (`--deviations`): none (the server as deployed), all of them
 * (`off`, NO_DEVIATIONS) or those named (`off:httpFastPath,queryJit`). `marker` is what the run's rows
 * carry in results.json (`ResultRow.deviations`), undefined for a normal run.
 */
interface DeviationsRun {
  off: (keyof Deviations)[];
  marker: string | undefined;
}
const ALL_ON: DeviationsRun = { off: [], marker: undefined };

function parseDeviations(value: string): DeviationsRun {
  const known = Object.keys(NO_DEVIATIONS) as (keyof Deviations)[];
  if (value === 'on') return ALL_ON;
  if (value === 'off') return { off: known, marker: 'off' };
  if (value.startsWith('off:')) {
    const named = value.slice('off:'.length).split(',').filter(Boolean);
    const unknown = named.filter((name) => !known.includes(name as keyof Deviations));
    if (!named.length || unknown.length)
      throw new Error(
        `--deviations=off:${named.join(',')}: name one or more of ${known.join(', ')}${unknown.length ? ` (not ${unknown.join(', ')})` : ''}`,
      );
    // In Deviations' order, so one set is one marker however it was written.
    const off = known.filter((name) => named.includes(name));
    return off.length === known.length ? { off, marker: 'off' } : { off, marker: `off:${off.join(',')}` };
  }
  throw new Error(`--deviations must be on, off or off:NAME,… (NAME one of ${known.join(', ')}), not ${value}`);
}

/** The `BuildAppOptions.deviations` of a run: those it turns off, false. */
const deviationsOf = (run: DeviationsRun): Partial<Deviations> => Object.fromEntries(run.off.map((name) => [name, false]));

/** A fresh app on a fresh database; `dispose` closes it and drops the database. */
async function freshApp(
  backend: BackendKind,
  postgresUrl: string | null,
  run: DeviationsRun,
): Promise<{ app: App; dispose: () => Promise<void> }> {
  const deviations = deviationsOf(run);
  if (backend === 'pglite') {
    // A database passed to buildApp keeps what createDatabase was told: the PGlite switch goes here.
    const database = await createDatabase({ kind: 'pglite', dataDir: 'memory://', pgliteStatements: deviations.pgliteStatements ?? true });
    const app = await buildApp(config(null), { database, deviations });
    await app.warm();
    return { app, dispose: () => app.close() };
  }
  const admin = new pg.Client({ connectionString: postgresUrl! });
  await admin.connect();
  const name = `sg_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresUrl!);
  url.pathname = `/${name}`;
  const drop = async () => {
    const c = new pg.Client({ connectionString: postgresUrl! });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  };
  let app: App;
  try {
    app = await buildApp(config(url.toString()), { deviations });
    await app.warm();
  } catch (error) {
    await drop();
    throw error;
  }
  return {
    app,
    dispose: async () => {
      await app.close();
      await drop();
    },
  };
}

function context(
  backend: BackendKind,
  app: App,
  workspaceId: string,
  options: { smoke: boolean; rounds: number },
  sibling: () => Promise<BenchContext>,
): BenchContext {
  const gql = async <T>(query: string, variables?: Record<string, unknown>): Promise<T> => {
    const response = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: T; errors?: { message: string }[] };
    if (body.errors?.length || !body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors ?? body)}`);
    return body.data;
  };
  const prisma = app.runtime.db.prisma;
  return {
    backend,
    smoke: options.smoke,
    rounds: options.rounds,
    app,
    workspaceId,
    gql,
    sibling,
    async time(fn) {
      const started = performance.now();
      const result = await fn();
      return { ms: performance.now() - started, result };
    },
    async countQueries(fn) {
      const counter = app.runtime.db.queries;
      counter.reset();
      const result = await fn();
      return { count: counter.count, statements: [...counter.statements], result };
    },
    async seedSession({ title, messages, tokens = 3, analyze = true }) {
      const created = await gql<{ createSession: { id: string } }>(
        'mutation ($title: String!) { createSession(input: { title: $title }) { id } }',
        { title },
      );
      const id = created.createSession.id;
      const rawId = parseGlobalId(id, 'Session', 'id');
      if (messages > 0) {
        await prisma.$executeRaw`
          INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds",
                                 generating, "tokensO200k", "tokensCl100k", "createdAt", "updatedAt")
          SELECT gen_random_uuid()::text, ${rawId}, g,
                 (CASE WHEN g % 2 = 0 THEN 'USER' ELSE 'ASSISTANT' END)::"MessageRole",
                 jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message ' || g)),
                 'message ' || g, '{}', '{}', false, ${tokens}, ${tokens},
                 now() + g * interval '1 millisecond', now() + g * interval '1 millisecond'
          FROM generate_series(0, ${messages - 1}::int) AS g`;
        await prisma.$executeRaw`UPDATE "Session" SET "messageCount" = ${messages} WHERE id = ${rawId}`;
        // Fresh planner statistics, as autovacuum would have them for a table in steady use.
        if (analyze) await prisma.$executeRawUnsafe('ANALYZE "Message"');
      }
      return { id, rawId, messageCount: messages };
    },
    collectGarbage: () => (globalThis as { gc?: () => void }).gc?.(),
    log: (message) => log(`  [${backend}] ${message}`),
  };
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Builds dist/ (what `npm start` runs) once per run, before the first process scenario. */
let built = false;
function buildDist() {
  if (built) return;
  log('building dist/ (npm run build)…');
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error('npm run build failed');
  built = true;
}

/** A migrated PGlite folder made once per run; each PGlite server gets a copy. */
let pgliteTemplate: string | null = null;
const scratch = mkdtempSync(join(tmpdir(), 'sg-bench-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

async function migratedTemplate(): Promise<string> {
  if (pgliteTemplate) return pgliteTemplate;
  const dir = join(scratch, 'template');
  const database = await createDatabase({ kind: 'pglite', dataDir: dir });
  await database.migrate();
  await database.close();
  pgliteTemplate = dir;
  return dir;
}

function processContext(
  backend: BackendKind,
  postgresUrl: string | null,
  redisUrl: string | null,
  options: { smoke: boolean; rounds: number; soak: number; deviations: DeviationsRun },
) {
  const procs: Proc[] = [];
  const drops: (() => Promise<void>)[] = [];
  const track = (proc: Proc) => {
    procs.push(proc);
    const stop = proc.stop;
    proc.stop = async () => {
      procs.splice(procs.indexOf(proc), 1);
      await stop();
    };
    return proc;
  };
  let folders = 0;
  const ctx: ProcessContext = {
    backend,
    smoke: options.smoke,
    rounds: options.rounds,
    soakSeconds: options.soak,
    redisUrl,
    async database(): Promise<BenchDatabase> {
      if (backend === 'pglite') {
        const dir = join(scratch, `db-${++folders}-${randomBytes(3).toString('hex')}`);
        cpSync(await migratedTemplate(), dir, { recursive: true });
        drops.push(async () => rmSync(dir, { recursive: true, force: true }));
        return { backend, url: null, dataDir: dir, env: { DATA_DIR: dir } };
      }
      const admin = new pg.Client({ connectionString: postgresUrl! });
      await admin.connect();
      const name = `sg_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      drops.push(async () => {
        const c = new pg.Client({ connectionString: postgresUrl! });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      });
      const url = new URL(postgresUrl!);
      url.pathname = `/${name}`;
      return { backend, url: url.toString(), dataDir: null, env: { DATABASE_URL: url.toString() } };
    },
    emptyDataDir() {
      const dir = join(scratch, `empty-${++folders}-${randomBytes(3).toString('hex')}`);
      drops.push(async () => rmSync(dir, { recursive: true, force: true }));
      return dir;
    },
    async server(db, opts = {}) {
      // `--deviations=off`: the same server started by bench/servers/obvious.mjs, with the deviations
      // the run names off (all of them: no arguments), from dist/ or, for the tsx runtime, from src/.
      const { off, marker } = options.deviations;
      const obvious = [join(ROOT, 'bench/servers/obvious.mjs'), ...(marker === 'off' ? [] : off)];
      const argv =
        opts.runtime === 'tsx'
          ? ['--import', 'tsx', ...(marker ? [...obvious, '--source'] : [join(ROOT, 'src/main.ts')])]
          : [
              // A V8 CPU profile of each server process, written when it stops (see bench/README.md).
              ...(process.env.BENCH_SERVER_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_CPU_PROF}`] : []),
              // Further node flags for each server process, for diagnostics (a preload, a V8 flag).
              ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
              // No --enable-source-maps: `npm start` runs without it, and it reads every module's
              // source map as the module loads (90 to 230 ms of a PGlite start on a migrated folder).
              ...(marker ? obvious : [join(ROOT, 'dist/main.js')]),
            ];
      const env: Record<string, string> = {
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'error',
        RATE_LIMIT: '0',
        DATABASE_URL: '',
        DATA_DIR: '',
        REDIS_URL: opts.redis && redisUrl ? redisUrl : '',
        REDIS_PREFIX: `sgbench:${process.pid}:${backend}:`,
        API_KEYS: '',
        AUTH_REQUIRED: 'false',
        ...db.env,
        ...opts.env,
      };
      const name = `server (${opts.runtime ?? 'dist'}${marker ? `, deviations ${marker}` : ''})`;
      const proc = track(await startProcess(name, argv, env));
      ctx.log(`${name} ready in ${(proc.readyMs / 1000).toFixed(1)} s`);
      return proc;
    },
    async bareYoga() {
      return track(await startProcess('bare Yoga', [join(ROOT, 'bench/servers/bare-yoga.mjs')], { PORT: '0' }));
    },
    async raw(env) {
      return track(
        await startProcess('raw baseline', [join(ROOT, 'bench/servers/raw.mjs')], {
          PORT: '0',
          DATABASE_URL: '',
          DATA_DIR: '',
          REDIS_URL: '',
          ...env,
        }),
      );
    },
    load: (mode, args) => runLoad(mode, args),
    async gql(url, query, variables) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as { data?: unknown; errors?: unknown[] };
      if (body.errors?.length || !body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors ?? body)}`);
      // biome-ignore lint/suspicious/noExplicitAny: scenarios read untyped response data by path
      return body.data as any;
    },
    log: (message) => log(`  [${backend}] ${message}`),
  };
  return {
    ctx,
    async dispose() {
      for (const proc of [...procs]) await proc.stop().catch(() => {});
      for (const drop of drops.splice(0)) await drop().catch((error) => log(`  cleanup: ${(error as Error).message}`));
    },
  };
}

function parseArgs(argv: string[]) {
  const names: string[] = [];
  let backends: BackendKind[] | null = null;
  let list = false;
  let smoke = false;
  let rounds: number | null = null;
  let soak: number | null = null;
  let deviations = ALL_ON;
  for (const arg of argv) {
    if (arg === '--list') list = true;
    else if (arg.startsWith('--deviations=')) deviations = parseDeviations(arg.slice('--deviations='.length));
    else if (arg === '--smoke') smoke = true;
    else if (arg.startsWith('--rounds=')) rounds = Math.max(1, Number.parseInt(arg.slice('--rounds='.length), 10) || 1);
    else if (arg.startsWith('--soak=')) soak = Math.max(1, Number.parseInt(arg.slice('--soak='.length), 10) || 1);
    else if (arg.startsWith('--backend=')) backends = arg.slice('--backend='.length).split(',') as BackendKind[];
    else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else names.push(arg);
  }
  return { names, backends, list, smoke, rounds: rounds ?? (smoke ? 1 : 3), soak: soak ?? (smoke ? 5 : 300), deviations };
}

function readResults(): ResultRow[] {
  if (!existsSync(RESULTS_JSON)) return [];
  try {
    const parsed = JSON.parse(readFileSync(RESULTS_JSON, 'utf8')) as { results?: ResultRow[] };
    return Array.isArray(parsed.results) ? parsed.results : [];
  } catch {
    log('bench/results.json is unreadable; starting it afresh.');
    return [];
  }
}

const fmt = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) >= 100 ? 1 : 3));

const markerOf = (r: ResultRow) => r.deviations ?? '';

/**
 * The rows of runs without deviations (`--deviations=off…`), one table per set turned off, each row
 * beside the normal row of the same scenario, backend and metric (its "with" figure).
 */
function withoutDeviationsTables(rows: ResultRow[]): string[] {
  const normal = new Map(rows.filter((r) => !r.deviations).map((r) => [`${r.scenario}\u0000${r.backend}\u0000${r.metric}`, r]));
  const markers = [...new Set(rows.map(markerOf).filter(Boolean))].sort();
  const lines: string[] = [];
  for (const marker of markers) {
    const off = marker === 'off' ? Object.keys(NO_DEVIATIONS).join(', ') : marker.slice('off:'.length).split(',').join(', ');
    lines.push(
      '',
      `## Without deviations: \`--deviations=${marker}\``,
      '',
      `Turned off: ${off} (\`buildApp\`'s \`deviations\`; bench/README.md). "with" is the normal row above, from its own run (its time in the last column);`,
      'compare ratios to a baseline measured in the same run, not absolute figures from runs at different loads. Target and pass are the row without.',
      '',
      '| scenario | backend | metric | with | without | unit | target | pass (without) | note | ran at (with / without) |',
      '|---|---|---|---:|---:|---|---|---|---|---|',
    );
    for (const r of rows.filter((row) => row.deviations === marker)) {
      const w = normal.get(`${r.scenario}\u0000${r.backend}\u0000${r.metric}`);
      const at = (row: ResultRow | undefined) => (row ? row.at.slice(0, 19).replace('T', ' ') : '—');
      lines.push(
        `| ${r.scenario} | ${r.backend} | ${r.metric} | ${w ? fmt(w.value) : '—'} | ${fmt(r.value)} | ${r.unit} | ${r.target ?? ''} | ${
          r.pass === null ? '' : r.pass ? 'yes' : '**NO**'
        } | ${(r.note ?? '').replace(/\|/g, '\\|')} | ${at(w)} / ${at(r)} |`,
      );
    }
  }
  return lines;
}

function writeResults(rows: ResultRow[]) {
  const environment = {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: `${cpus()[0]?.model ?? 'unknown'} ×${cpus().length}`,
    loadAverage: { atStart: startLoad, atEnd: loadavg().map((l) => Number(l.toFixed(2))) },
  };
  const updatedAt = new Date().toISOString();
  writeFileSync(RESULTS_JSON, `${JSON.stringify({ updatedAt, environment, results: rows }, null, 2)}\n`);
  const lines = [
    '# Benchmark results',
    '',
    `Written by \`npm run bench\` (bench/run.ts); last run ${updatedAt} on Node ${environment.node}, ${environment.platform}, ${environment.cpu};`,
    `load average (1/5/15 min) ${environment.loadAverage.atStart.join(' / ')} at the start, ${environment.loadAverage.atEnd.join(' / ')} at the end.`,
    'Each row shows when its scenario last ran. The in-process scenarios (context, fork, pathological, turns) time `yoga.fetch` calls, database included;',
    'the others run the server (compiled dist/) as its own process, loaded over real sockets from a separate load process, with their baseline in the same run',
    '(bench/README.md says how to read them: on this shared 2-core machine the ratios count, not the absolute figures).',
    '',
    '| scenario | backend | metric | value | unit | target | pass | note | ran at |',
    '|---|---|---|---:|---|---|---|---|---|',
    ...rows
      .filter((r) => !r.deviations)
      .map(
        (r) =>
          `| ${r.scenario} | ${r.backend} | ${r.metric} | ${fmt(r.value)} | ${r.unit} | ${r.target ?? ''} | ${
            r.pass === null ? '' : r.pass ? 'yes' : '**NO**'
          } | ${(r.note ?? '').replace(/\|/g, '\\|')} | ${r.at.slice(0, 19).replace('T', ' ')} |`,
      ),
    ...withoutDeviationsTables(rows),
    '',
  ];
  writeFileSync(RESULTS_MD, lines.join('\n'));
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const all = await loadScenarios();
  if (args.list) {
    for (const s of all) console.log(`${s.name}\t${s.description}`);
    return;
  }
  const unknown = args.names.filter((n) => !all.some((s) => s.name === n));
  if (unknown.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')}; known: ${all.map((s) => s.name).join(', ')}`);
  // A smoke run covers the scenarios over sockets and the in-process ones that have a smoke size;
  // the other in-process ones run full size and are left to named runs.
  const selected = args.names.length
    ? all.filter((s) => args.names.includes(s.name))
    : args.smoke
      ? all.filter((s) => s.mode === 'process' || s.smoke)
      : all;

  // A smoke run (CI) uses one backend unless told: PostgreSQL + Redis when they answer, else PGlite.
  const wanted = args.backends ?? (args.smoke ? ['postgres'] : ['pglite', 'postgres']);
  const postgresUrl = wanted.includes('postgres') ? await findPostgres() : null;
  let backends = wanted.filter((b) => b === 'pglite' || (b === 'postgres' && postgresUrl)) as BackendKind[];
  if (!backends.length) backends = ['pglite'];

  const redisUrl = selected.some((s) => s.mode === 'process')
    ? (await redisAnswers(process.env.BENCH_REDIS_URL ?? DEFAULT_REDIS))
      ? (process.env.BENCH_REDIS_URL ?? DEFAULT_REDIS)
      : null
    : null;
  if (selected.some((s) => s.mode === 'process') && !redisUrl)
    log('Redis does not answer: the fan-out and two-instance cases are skipped.');

  const fresh: ResultRow[] = [];
  const ran = new Set<string>();
  const marker = args.deviations.marker;
  if (marker) log(`deviations off (--deviations=${marker}): ${args.deviations.off.join(', ')}; rows are stored beside the normal ones`);
  let failures = 0;
  const runStarted = performance.now();
  for (const scenario of selected) {
    for (const backend of backends) {
      log(`${scenario.name} on ${backend}${marker ? `, deviations ${marker}` : ''}: ${scenario.description}`);
      const started = performance.now();
      let rows: Row[];
      if (scenario.mode === 'process') {
        const { ctx, dispose } = processContext(backend, postgresUrl, redisUrl, args);
        try {
          buildDist();
          rows = await scenario.run(ctx);
        } catch (error) {
          failures++;
          log(`  [${backend}] FAILED: ${(error as Error).stack ?? error}`);
          continue;
        } finally {
          await dispose();
        }
      } else {
        const disposers: (() => Promise<void>)[] = [];
        const open = async (): Promise<BenchContext> => {
          const { app, dispose } = await freshApp(backend, postgresUrl, args.deviations);
          disposers.push(dispose);
          const workspaceId = await app.runtime.auth.workspaceFor(null);
          return context(backend, app, workspaceId, args, open);
        };
        try {
          rows = await scenario.run(await open());
        } catch (error) {
          failures++;
          log(`  [${backend}] FAILED: ${(error as Error).stack ?? error}`);
          continue;
        } finally {
          for (const dispose of disposers.reverse()) await dispose();
        }
      }
      const at = new Date().toISOString();
      ran.add(`${scenario.name}\u0000${backend}\u0000${marker ?? ''}`);
      for (const row of rows) {
        const target = row.target ?? null;
        const result: ResultRow = {
          scenario: scenario.name,
          backend,
          metric: row.metric,
          value: row.value,
          unit: row.unit,
          target: target ? `${target.op} ${target.value}` : null,
          pass: target ? meets(row.value, target) : null,
          note: row.note ?? null,
          at,
          ...(marker ? { deviations: marker } : {}),
        };
        fresh.push(result);
        const verdict = result.pass === null ? '' : result.pass ? '  ok' : '  MISSED';
        log(`  [${backend}] ${row.metric} = ${fmt(row.value)} ${row.unit}${result.target ? ` (target ${result.target})` : ''}${verdict}`);
      }
      log(
        `  [${backend}] done in ${((performance.now() - started) / 1000).toFixed(1)} s (${((performance.now() - runStarted) / 60_000).toFixed(1)} min so far)`,
      );
    }
  }

  // Rows that say nothing may be lost or fail (deliveries, errors): these fail a smoke run, ratios never do.
  const broken = fresh.filter((r) => r.pass === false && (r.unit === 'deliveries' || r.unit === 'errors'));
  if (args.smoke) {
    log(`smoke run: ${fresh.length} rows, ${failures} scenario(s) crashed, ${broken.length} correctness row(s) failed; nothing written.`);
    for (const r of broken) log(`  ${r.scenario}/${r.backend}/${r.metric} = ${r.value} (must be ${r.target})`);
    if (failures || broken.length) process.exitCode = 1;
    return;
  }
  // A full run of a scenario on a backend replaces all its rows (a metric it no longer writes goes);
  // a run narrowed to one case (BENCH_<SCENARIO>_CASE) replaces only the rows it wrote again.
  const narrowed = Object.keys(process.env).some((name) => /^BENCH_[A-Z]+_CASE$/.test(name) && process.env[name]);
  // A run with deviations off replaces only rows of the same marker: the normal rows stay (and the reverse).
  const rowKey = (r: ResultRow) => `${r.scenario}\u0000${r.backend}\u0000${r.metric}\u0000${markerOf(r)}`;
  const rewritten = new Set(fresh.map(rowKey));
  const kept = readResults().filter((r) =>
    narrowed ? !rewritten.has(rowKey(r)) : !ran.has(`${r.scenario}\u0000${r.backend}\u0000${markerOf(r)}`),
  );
  const order = (r: ResultRow) => `${r.scenario}\u0000${r.backend === 'pglite' ? 0 : 1}`;
  const merged = [...kept, ...fresh].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  writeResults(merged);
  log(`wrote bench/results.json and bench/results.md (${fresh.length} new rows, ${kept.length} kept)`);
  const missed = fresh.filter((r) => r.pass === false);
  if (missed.length) log(`${missed.length} target(s) missed: ${missed.map((r) => `${r.scenario}/${r.backend}/${r.metric}`).join(', ')}`);
  if (broken.length)
    log(`${broken.length} correctness row(s) failed: ${broken.map((r) => `${r.scenario}/${r.backend}/${r.metric}`).join(', ')}`);
  if (failures || broken.length) process.exitCode = 1;
}

main().catch((error) => {
  log((error as Error).stack ?? String(error));
  process.exitCode = 1;
});
