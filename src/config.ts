import { resolve } from 'node:path';
import type { QueryJitOptions } from './graphql/query-jit.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** An API key configured at start: the key selects (and creates, if needed) the named workspace. */
export interface ApiKeyConfig {
  workspace: string;
  key: string;
}

/** Sizes of the in-process caches (src/caches/; each states its rule beside it). */
export interface CacheConfig {
  /** Characters of parsed message parts kept (PARTS_CACHE_MAX_CHARS). */
  partsMaxChars: number;
  /** Light message rows kept over all sessions (ROWS_CACHE_MAX_ROWS). */
  rowsMax: number;
  /** Light message rows kept for one session (ROWS_CACHE_MAX_ROWS_PER_SESSION); whole rows for pages too. */
  rowsMaxPerSession: number;
  /** Characters of whole finished message rows kept for `Session.messages` pages (PAGE_CACHE_MAX_CHARS). */
  pageMaxChars: number;
  /** Session rows kept when this process is the database's only writer, PGlite (SESSION_CACHE_MAX_ROWS). */
  sessionRowsMax: number;
  /** Sessions whose window hint is kept (WINDOW_HINTS_MAX). */
  windowHintsMax: number;
  /** API key lookups kept (API_KEY_CACHE_MAX). */
  apiKeyMax: number;
  /**
   * How long an API key lookup is trusted, in ms (API_KEY_CACHE_TTL_MS): the bound on how long a key
   * revoked with `npm run keys -- revoke` keeps working on an instance.
   */
  apiKeyTtlMs: number;
  /** Distinct subscription selections given a short id for sharing executions, and query texts kept once for every WebSocket subscriber (SUBSCRIPTION_SHAPES_MAX). */
  subscriptionShapesMax: number;
}

export const DEFAULT_CACHE_CONFIG: CacheConfig = {
  partsMaxChars: 32_000_000,
  rowsMax: 250_000,
  rowsMaxPerSession: 16_384,
  pageMaxChars: 8_000_000,
  sessionRowsMax: 10_000,
  windowHintsMax: 10_000,
  apiKeyMax: 10_000,
  apiKeyTtlMs: 5_000,
  subscriptionShapesMax: 1_000,
};

const CACHE_VARIABLES: Record<keyof CacheConfig, string> = {
  partsMaxChars: 'PARTS_CACHE_MAX_CHARS',
  rowsMax: 'ROWS_CACHE_MAX_ROWS',
  rowsMaxPerSession: 'ROWS_CACHE_MAX_ROWS_PER_SESSION',
  pageMaxChars: 'PAGE_CACHE_MAX_CHARS',
  sessionRowsMax: 'SESSION_CACHE_MAX_ROWS',
  windowHintsMax: 'WINDOW_HINTS_MAX',
  apiKeyMax: 'API_KEY_CACHE_MAX',
  apiKeyTtlMs: 'API_KEY_CACHE_TTL_MS',
  subscriptionShapesMax: 'SUBSCRIPTION_SHAPES_MAX',
};

/** Everything the server is configured by. `buildApp` takes this; only `main.ts` reads the environment. */
export interface AppConfig {
  port: number;
  host: string;
  /** PGlite data folder for the embedded default; `memory://` keeps everything in memory. */
  dataDir: string;
  /**
   * PGlite's page cache (its Postgres's `shared_buffers`), in MB (PGLITE_SHARED_BUFFERS_MB). The
   * folder's own setting (initdb's 128 MB) is all zeroed at every start, in the process's memory.
   */
  pgliteSharedBuffersMb: number;
  /** A postgres:// URL selects real PostgreSQL instead of PGlite. */
  databaseUrl: string | null;
  /** A redis:// URL selects Redis pub/sub instead of the in-memory one. */
  redisUrl: string | null;
  /** Prefix of the Redis channels, so several deployments can share one Redis. */
  redisPrefix: string;
  logLevel: LogLevel;
  apiKeys: ApiKeyConfig[];
  /** NODE_ENV=production: turns off development checks (Pothos's unused-query check). */
  production: boolean;
  caches: CacheConfig;
  /** An ACTIVE turn with no usage report, message or heartbeat for this long is failed by the server. */
  turnTimeoutMs: number;
  /** How often each instance looks for such stale turns. */
  turnSweepIntervalMs: number;
  /**
   * Whether every request needs a valid API key. `null` (AUTH_REQUIRED unset outside production):
   * required as soon as one unrevoked key exists, keyless (one default workspace) otherwise.
   */
  authRequired: boolean | null;
  /** Origins browsers may call from (`*`: any origin, without credentials); empty: same origin only. */
  corsOrigins: string[];
  /** Requests (HTTP operations and WebSocket subscribes) per key, or per IP without a key, per window; 0 turns limiting off. */
  rateLimit: { requests: number; windowMs: number };
  /** GraphiQL and introspection. */
  graphiql: boolean;
  /** How long a shutdown waits for in-flight requests before cutting their connections. */
  shutdownGraceMs: number;
  /** Node `http.Server` limits against slow clients. */
  timeouts: { headersMs: number; requestMs: number; keepAliveMs: number; idleMs: number };
  /** Longest wait for one dependency in `/readyz`. */
  readyTimeoutMs: number;
  /**
   * The longest string argument in UTF-16 units (MAX_STRING_CHARS); attachments, arguments and the
   * body cap follow it (`textCaps`). `null`: the backend's default, 1 Mi on PostgreSQL and 256 Ki on
   * the embedded PGlite, whose inserts run on the request thread (`DEFAULT_STRING_CHARS`).
   */
  maxStringChars: number | null;
  /**
   * Compiling repeated queries (src/graphql/query-jit.ts): the execution of a document that compiles it
   * (QUERY_JIT_AFTER_USES, 0: never), the largest document compiled, in fields (QUERY_JIT_MAX_FIELDS),
   * and how many compiled documents are kept (QUERY_JIT_MAX_DOCUMENTS).
   */
  queryJit: QueryJitOptions;
  /**
   * How far V8 lets the old generation grow past what the last full GC kept before it collects
   * again, in percent (HEAP_GROWING_PERCENT; 0: V8's own factor, which under a steady request load
   * lets it grow to 2 to 4 times the live heap). Applied once at start by `main.ts`
   * (`applyHeapSettings`), since it is a process-wide V8 setting.
   */
  heapGrowingPercent: number;
  /**
   * V8's allocation-site pretenuring (ALLOCATION_SITE_PRETENURING, off by default): see
   * `applyHeapSettings` for why it is off.
   */
  allocationSitePretenuring: boolean;
  /**
   * Scavenges in the event loop's idle time (IDLE_GC, on by default): see src/process/idle-gc.ts.
   * Started once by `main.ts`, since the heap is the process's.
   */
  idleGc: boolean;
}

/**
 * HEAP_GROWING_PERCENT's default. Under steady load the server's live heap stays flat (about 62 MB
 * after a forced GC all through a 300 s bench soak; heap snapshots at 60 s and 280 s differ by
 * 0.4 MB, JIT code), but requests promote a few MB/s of short-lived objects into the old
 * generation, and V8's own growing factor (its choice from GC and mutator speed, up to 4x) lets that
 * garbage reach 2 to 4 times the live heap before each full GC: RSS swung by 100 to 300 MB, and a
 * soak's end minus its start was whichever phase it was sampled in (+49 MB, then −67 MB, for the
 * same code). At 50 % the old generation stays within 1.5x the live heap: the bench soak held RSS
 * within 245 to 253 MB (120 s and 300 s runs; +1 MB end minus a fifth in). Alone it made full GCs
 * about twice as frequent (their CPU per read of the soak, GC trace: 35 to 100 µs, of 500 to 700
 * µs per read); with pretenuring off (ALLOCATION_SITE_PRETENURING), which cut the bytes promoted
 * per read from 7.5 to 1.6 KB, full GCs are as rare as with V8's defaults or rarer (6 instead of 10
 * to 20 in 30 s of the soak; 10 to 19 µs per read). 100 lets RSS move by up to the live heap; 0
 * restores V8's own factor.
 */
export const DEFAULT_HEAP_GROWING_PERCENT = 50;

/**
 * PGLITE_SHARED_BUFFERS_MB's default. Postgres zeroes its whole page cache at start: at initdb's
 * 128 MB that is ~80–100 MB more RSS and ~60 ms more start than at 32 MB. The embedded database
 * holds one application's sessions; its data files stay in the OS page cache beside it.
 */
export const DEFAULT_PGLITE_SHARED_BUFFERS_MB = 32;

export class ConfigError extends Error {}

const LOG_LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/**
 * Parses and validates the environment once. Throws a ConfigError naming the variable at fault.
 *
 * | variable | default | meaning |
 * | PORT | 4000 | TCP port |
 * | HOST | 0.0.0.0 | interface to bind |
 * | DATA_DIR | ./.data | PGlite folder when DATABASE_URL is unset |
 * | PGLITE_SHARED_BUFFERS_MB | 32 | PGlite's page cache (Postgres `shared_buffers`), 4 to 1024 MB |
 * | DATABASE_URL | — | postgres:// URL: real PostgreSQL |
 * | REDIS_URL | — | redis:// URL: Redis pub/sub |
 * | REDIS_PREFIX | session-graph: | Redis channel prefix |
 * | LOG_LEVEL | info | debug, info, warn, error, silent |
 * | API_KEYS | — | comma-separated workspace:key pairs |
 * | TURN_TIMEOUT_MS | 600000 | an ACTIVE turn idle this long (no usage, message, heartbeat) is failed |
 * | TURN_SWEEP_INTERVAL_MS | 30000 | how often each instance looks for stale turns |
 * | NODE_ENV | — | production turns off Pothos's development checks |
 * | AUTH_REQUIRED | true in production, else auto | auto: keys required once one exists |
 * | CORS_ORIGINS | — | comma-separated allowed origins, or * (no credentials) |
 * | RATE_LIMIT | 3000 | requests per window per key (per IP without one); 0 = off |
 * | RATE_LIMIT_WINDOW_MS | 60000 | rate-limit window |
 * | GRAPHIQL | false in production, else true | GraphiQL and introspection |
 * | SHUTDOWN_GRACE_MS | 10000 | in-flight requests get this long on SIGTERM |
 * | HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS | 10000, 30000, 5000 | slow-client limits |
 * | IDLE_TIMEOUT_MS | 60000 | an HTTP socket with no traffic either way this long is destroyed (0: never) |
 * | READY_TIMEOUT_MS | 500 | per-dependency wait in /readyz |
 * | MAX_STRING_CHARS | 1048576 on PostgreSQL, 262144 on PGlite | longest string argument; attachment bytes, arguments and body cap follow |
 * | NODE_ENV | — | production: keys required, GraphiQL off, Pothos's development checks off |
 * | QUERY_JIT_AFTER_USES, QUERY_JIT_MAX_FIELDS, QUERY_JIT_MAX_DOCUMENTS | 2, 64, 200 | a query or mutation document's 2nd execution (a subscription's 2nd event) compiles it (0: never), if it has at most 64 fields; 200 compiled documents kept |
 * | HEAP_GROWING_PERCENT | 50 | old generation may grow this much past the live heap before V8 collects it (0: V8's own, 100 to 300 %) |
 * | ALLOCATION_SITE_PRETENURING | false | V8 allocating objects of long-surviving allocation sites in the old generation |
 * | IDLE_GC | true | scavenge (young-generation GC) when the event loop is idle, not in the middle of the next request |
 * | PARTS_CACHE_MAX_CHARS, ROWS_CACHE_MAX_ROWS, ROWS_CACHE_MAX_ROWS_PER_SESSION, PAGE_CACHE_MAX_CHARS, SESSION_CACHE_MAX_ROWS, WINDOW_HINTS_MAX, API_KEY_CACHE_MAX, API_KEY_CACHE_TTL_MS | see DEFAULT_CACHE_CONFIG | cache sizes |
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const production = env.NODE_ENV?.trim() === 'production';
  const port = parsePort(env.PORT);
  const host = env.HOST?.trim() || '0.0.0.0';

  const dataDirRaw = env.DATA_DIR?.trim() || './.data';
  const dataDir = dataDirRaw.startsWith('memory://') ? dataDirRaw : resolve(dataDirRaw);

  const databaseUrl = env.DATABASE_URL?.trim() || null;
  if (databaseUrl && !/^postgres(ql)?:\/\/.+/.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must be a postgres:// or postgresql:// URL (got "${redact(databaseUrl)}").`);
  }
  if (databaseUrl) checkUrl('DATABASE_URL', databaseUrl);

  const redisUrl = env.REDIS_URL?.trim() || null;
  if (redisUrl && !/^rediss?:\/\/.+/.test(redisUrl)) {
    throw new ConfigError(`REDIS_URL must be a redis:// or rediss:// URL (got "${redact(redisUrl)}").`);
  }
  if (redisUrl) checkUrl('REDIS_URL', redisUrl);

  const logLevel = (env.LOG_LEVEL?.trim().toLowerCase() || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${env.LOG_LEVEL}").`);
  }

  return {
    port,
    host,
    dataDir,
    pgliteSharedBuffersMb: parseInteger(env, 'PGLITE_SHARED_BUFFERS_MB', DEFAULT_PGLITE_SHARED_BUFFERS_MB, 4, 1024),
    databaseUrl,
    redisUrl,
    redisPrefix: env.REDIS_PREFIX ?? 'session-graph:',
    logLevel,
    apiKeys: parseApiKeys(env.API_KEYS),
    turnTimeoutMs: parseDuration('TURN_TIMEOUT_MS', env.TURN_TIMEOUT_MS, 10 * 60_000),
    turnSweepIntervalMs: parseDuration('TURN_SWEEP_INTERVAL_MS', env.TURN_SWEEP_INTERVAL_MS, 30_000),
    production,
    caches: parseCaches(env),
    authRequired: parseBoolean(env, 'AUTH_REQUIRED') ?? (production ? true : null),
    corsOrigins: parseOrigins(env.CORS_ORIGINS),
    rateLimit: {
      requests: parseInteger(env, 'RATE_LIMIT', 3_000, 0),
      windowMs: parseInteger(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1),
    },
    graphiql: parseBoolean(env, 'GRAPHIQL') ?? !production,
    shutdownGraceMs: parseInteger(env, 'SHUTDOWN_GRACE_MS', 10_000, 0),
    timeouts: {
      headersMs: parseInteger(env, 'HEADERS_TIMEOUT_MS', 10_000, 1),
      requestMs: parseInteger(env, 'REQUEST_TIMEOUT_MS', 30_000, 1),
      keepAliveMs: parseInteger(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 1),
      idleMs: parseInteger(env, 'IDLE_TIMEOUT_MS', 60_000, 0),
    },
    readyTimeoutMs: parseInteger(env, 'READY_TIMEOUT_MS', 500, 1),
    maxStringChars: env.MAX_STRING_CHARS?.trim() ? parseInteger(env, 'MAX_STRING_CHARS', 0, 1024) : null,
    queryJit: {
      afterUses: parseInteger(env, 'QUERY_JIT_AFTER_USES', 2, 0),
      maxFields: parseInteger(env, 'QUERY_JIT_MAX_FIELDS', 64, 1),
      maxDocuments: parseInteger(env, 'QUERY_JIT_MAX_DOCUMENTS', 200, 0),
    },
    heapGrowingPercent: parseInteger(env, 'HEAP_GROWING_PERCENT', DEFAULT_HEAP_GROWING_PERCENT, 0),
    allocationSitePretenuring: parseBoolean(env, 'ALLOCATION_SITE_PRETENURING') ?? false,
    idleGc: parseBoolean(env, 'IDLE_GC') ?? true,
  };
}

function parseCaches(env: NodeJS.ProcessEnv): CacheConfig {
  const caches = { ...DEFAULT_CACHE_CONFIG };
  for (const key of Object.keys(CACHE_VARIABLES) as (keyof CacheConfig)[]) {
    const name = CACHE_VARIABLES[key];
    const raw = env[name]?.trim();
    if (!raw) continue;
    const value = Number(raw.replaceAll('_', ''));
    if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError(`${name} must be a positive integer (got "${raw}").`);
    caches[key] = value;
  }
  return caches;
}

function parseBoolean(env: NodeJS.ProcessEnv, name: string): boolean | null {
  const raw = env[name]?.trim().toLowerCase();
  if (!raw) return null;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false (got "${env[name]}").`);
}

function parseInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`${name} must be an integer ${range} (got "${env[name]}").`);
  }
  return value;
}

function parseOrigins(raw: string | undefined): string[] {
  if (!raw?.trim()) return [];
  return raw.split(',').map((entry) => {
    const origin = entry.trim();
    if (origin === '*') return origin;
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      throw new ConfigError(`CORS_ORIGINS must be comma-separated origins such as https://app.example.com, or * (got "${origin}").`);
    }
    if (parsed.origin !== origin.replace(/\/$/, '')) {
      throw new ConfigError(`CORS_ORIGINS entries are origins (scheme, host, port) without a path (got "${origin}").`);
    }
    return parsed.origin;
  });
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 4000;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be an integer from 0 to 65535 (got "${raw}").`);
  }
  return port;
}

/** A positive whole number of milliseconds, at most a day (setInterval's limit is about 24.8 days). */
function parseDuration(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1 || ms > 86_400_000) {
    throw new ConfigError(`${name} must be a whole number of milliseconds from 1 to 86400000 (got "${raw}").`);
  }
  return ms;
}

function checkUrl(name: string, url: string) {
  try {
    new URL(url);
  } catch {
    throw new ConfigError(`${name} is not a valid URL.`);
  }
}

function parseApiKeys(raw: string | undefined): ApiKeyConfig[] {
  if (!raw || raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const at = entry.indexOf(':');
    const workspace = entry.slice(0, at).trim();
    const key = entry.slice(at + 1).trim();
    if (at <= 0 || !workspace || key.length < 16) {
      throw new ConfigError('API_KEYS must be comma-separated workspace:key pairs, each key at least 16 characters.');
    }
    return { workspace, key };
  });
}

/** A URL with its password hidden, for logs and errors. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
