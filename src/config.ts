import { resolve } from 'node:path';
import { type CacheConfig, cacheSizes, defaultCacheMemoryMb } from './caches/sizes.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** What a key may do: READ runs queries and subscriptions only, FULL runs mutations too (ApiKey.scope). */
export type KeyScope = 'READ' | 'FULL';

/** An API key configured at start: the key selects (and creates, if needed) the named workspace. */
export interface ApiKeyConfig {
  workspace: string;
  key: string;
  /** FULL unless the entry ends in `:read` (omitted: FULL). */
  scope?: KeyScope;
}

/** Compiling repeated documents (src/graphql/query-jit.ts). */
export interface QueryJitOptions {
  /** The execution of a document that compiles it; 0 turns compiling off. */
  afterUses: number;
  /** Largest document compiled, in fields. */
  maxFields: number;
  /** Compiled documents kept. */
  maxDocuments: number;
  /** At most `compiles` compilations per `windowMs`, whatever the documents (default: query-jit.ts's COMPILE_BUDGET). */
  budget?: { compiles: number; windowMs: number };
}

/** The server's query JIT: a document's 2nd execution compiles it if it has at most 64 fields; 200 compiled documents kept. */
export const DEFAULT_QUERY_JIT: QueryJitOptions = { afterUses: 2, maxFields: 64, maxDocuments: 200 };

/** PGlite's page cache (its Postgres's `shared_buffers`) in MB, set at every start whatever the data folder says. */
export const DEFAULT_PGLITE_SHARED_BUFFERS_MB = 32;

/** `/readyz`'s longest wait for one dependency, in ms. */
export const READY_TIMEOUT_MS = 500;
/** A read replica behind what the primary had written this long ago is skipped, and `/readyz` says `degraded` (a constant: the settings table stays short). */
export const REPLICA_MAX_LAG_MS = 5_000;

/** How often stale turns are looked for: a twentieth of TURN_TIMEOUT_MS, at most 30 s, so a turn is failed at most 5 % late. */
export function turnSweepInterval(turnTimeoutMs: number): number {
  return Math.max(1, Math.min(30_000, Math.round(turnTimeoutMs / 20)));
}

/** How often old events are swept: a quarter of EVENT_RETENTION_MS, at most a minute, so an event outlives it by at most 25 %. */
export function eventSweepInterval(retentionMs: number): number {
  return Math.max(1, Math.min(60_000, Math.round(retentionMs / 4)));
}

/** Everything the server is configured by. `buildApp` takes this; only `start.ts` (what `main.ts` runs) reads the environment. */
export interface AppConfig {
  port: number;
  host: string;
  /** PGlite data folder for the embedded default; `memory://` keeps everything in memory. */
  dataDir: string;
  /** PGlite's page cache in MB (DEFAULT_PGLITE_SHARED_BUFFERS_MB). */
  pgliteSharedBuffersMb: number;
  /** A postgres:// URL selects real PostgreSQL instead of PGlite. */
  databaseUrl: string | null;
  /** Streaming replicas of `databaseUrl` that serve queries (db/replicas.ts); empty: the primary serves all. */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this is skipped (REPLICA_MAX_LAG_MS; tests set their own). */
  replicaMaxLagMs: number;
  /** A redis:// URL selects Redis pub/sub instead of the in-memory one. */
  redisUrl: string | null;
  /** Seed nodes (`host:port`) of a Redis Cluster: sharded pub/sub and hash-tagged keys; `redisUrl` is then unused. */
  redisClusterNodes: string[] | null;
  /** Prefix of the Redis channels, so several deployments can share one Redis. */
  redisPrefix: string;
  logLevel: LogLevel;
  apiKeys: ApiKeyConfig[];
  /** NODE_ENV=production: turns off development checks (Pothos's unused-query check). */
  production: boolean;
  caches: CacheConfig;
  /** An ACTIVE turn with no usage report, message or heartbeat for this long is failed by the server. */
  turnTimeoutMs: number;
  /** How often each instance looks for such stale turns (`turnSweepInterval`). */
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
  /** GraphiQL, the explorer page (`/explorer`) and introspection. */
  graphiql: boolean;
  /** How long a shutdown waits for in-flight requests before cutting their connections. */
  shutdownGraceMs: number;
  /** Node `http.Server` limits against slow clients. */
  timeouts: { headersMs: number; requestMs: number; keepAliveMs: number; idleMs: number };
  /** Longest wait for one dependency in `/readyz` (READY_TIMEOUT_MS). */
  readyTimeoutMs: number;
  /**
   * The longest string argument in UTF-16 units; attachments, arguments and the body cap follow it
   * (`textCaps`). `null`: the backend's default (`DEFAULT_STRING_CHARS`).
   */
  maxStringChars: number | null;
  /** Compiling repeated queries (DEFAULT_QUERY_JIT). */
  queryJit: QueryJitOptions;
  /** The bearer token `/metrics` requires; null: open (as scrapers inside a cluster expect). */
  metricsToken: string | null;
  /** Path of the trusted documents manifest (`sha256 → document`); null: any document runs. */
  trustedDocuments: string | null;
  /** Events older than this are deleted by a sweep (`eventSweepInterval`); null: kept for ever. */
  eventRetentionMs: number | null;
}

/** A documented environment variable: what the settings table of docs/operations.md shows, and for integers how it is parsed. */
export interface Setting {
  meaning: string;
  /** The default as the table shows it (integers: `integer`, unless given). */
  shown?: string;
  /** An integer variable: its default, and its bounds. */
  integer?: number;
  min?: number;
  max?: number;
  /** A duration read as whole milliseconds from 1 to a day. */
  duration?: boolean;
}

/**
 * Every environment variable the server reads, in the order of the settings table of
 * docs/operations.md (`npm run docs` prints the table from this list; `loadConfig` reads nothing
 * else, and a test checks it reads all of them).
 */
export const SETTINGS = {
  PORT: { integer: 4000, min: 0, max: 65535, meaning: 'TCP port (0 picks a free one)' },
  HOST: { shown: '`0.0.0.0`', meaning: 'interface to listen on' },
  DATA_DIR: { shown: '`./.data`', meaning: 'PGlite data folder when `DATABASE_URL` is unset (`memory://` keeps nothing)' },
  DATABASE_URL: { meaning: '`postgres://…` selects real PostgreSQL (through `@prisma/adapter-pg`)' },
  DATABASE_REPLICA_URLS: {
    meaning:
      "comma-separated `postgres://…` streaming replicas of `DATABASE_URL`: queries are read from them, mutations and subscriptions from the primary; a request sending a mutation's `consistencyToken` sees its write (see Read replicas)",
  },
  REDIS_URL: {
    meaning: "`redis://…` selects Redis pub/sub (and shared rate limits), so instances see each other's writes",
  },
  REDIS_CLUSTER_NODES: {
    meaning:
      'comma-separated `host:port` seed nodes of a Redis Cluster (7+): sharded pub/sub (`SPUBLISH`), each key in one slot; `REDIS_URL` is then unused (see Redis Cluster)',
  },
  REDIS_PREFIX: {
    shown: '`session-graph:`',
    meaning: 'prefix of the Redis channels and keys (several deployments can share one Redis)',
  },
  LOG_LEVEL: { shown: '`info`', meaning: '`debug`, `info`, `warn`, `error` or `silent`; logs are JSON lines' },
  NODE_ENV: {
    meaning:
      "`production`: keys required, GraphiQL and introspection off, Pothos's development checks off (an unused Prisma query is an error otherwise)",
  },
  API_KEYS: {
    meaning: 'comma-separated `workspace:key` pairs (keys ≥ 16 characters), stored hashed at start: a bootstrap, see below',
  },
  AUTH_REQUIRED: {
    shown: '`true` in production, else unset',
    meaning:
      '`true`: every request needs a valid key; `false`: requests without a key use the default workspace; unset: keys are required as soon as one unrevoked key exists',
  },
  API_KEY_CACHE_TTL_MS: {
    integer: 5_000,
    min: 1,
    meaning: 'how long an instance trusts a key lookup: a revoked key stops working everywhere within this time',
  },
  CORS_ORIGINS: {
    meaning:
      'comma-separated origins browsers may call from (`https://app.example.com`), or `*` (any origin, never with credentials); unset: same origin only',
  },
  RATE_LIMIT: { integer: 3_000, min: 0, meaning: 'requests per window per API key (per client IP without one); `0` turns limiting off' },
  RATE_LIMIT_WINDOW_MS: { integer: 60_000, min: 1, meaning: 'rate-limit window' },
  GRAPHIQL: {
    shown: '`false` in production, else `true`',
    meaning: 'GraphiQL on a browser GET, the explorer page at `/explorer`, and introspection',
  },
  MAX_STRING_CHARS: {
    min: 1024,
    shown: '`1048576` on PostgreSQL, `262144` on PGlite',
    meaning:
      'longest string argument in UTF-16 units (at least 1,024); attachment bytes, per-field arguments and the body cap follow it (see Input limits)',
  },
  TURN_TIMEOUT_MS: {
    integer: 600_000,
    duration: true,
    shown: '`600000` (10 min)',
    meaning:
      'an ACTIVE turn with no usage report, message or heartbeat for this long is failed by the server; each instance looks for such turns every twentieth of it (at most every 30 s)',
  },
  SHUTDOWN_GRACE_MS: {
    integer: 10_000,
    min: 0,
    meaning:
      'on SIGTERM, how long requests already sent may take; those still unanswered then get 503 `SERVICE_UNAVAILABLE` and their connections are closed',
  },
  HEADERS_TIMEOUT_MS: { integer: 10_000, min: 1, meaning: 'a client must send its request headers within this time (else 408)' },
  REQUEST_TIMEOUT_MS: { integer: 30_000, min: 1, meaning: '… and its whole request, body included' },
  KEEP_ALIVE_TIMEOUT_MS: {
    integer: 5_000,
    min: 1,
    meaning: "an idle keep-alive connection is closed after this time (behind a load balancer: longer than the balancer's own)",
  },
  IDLE_TIMEOUT_MS: {
    integer: 60_000,
    min: 0,
    meaning:
      'a socket with no progress either way for this long (nothing read, nothing taken by the client: one that stopped reading a response included) is reset (RST: what the kernel still held for the client is dropped) within a tenth of it; a request the server is still working on is not idle; `0`: never',
  },
  METRICS_TOKEN: {
    meaning:
      '`/metrics` (Prometheus text) requires `Authorization: Bearer <token>` (401 without, 403 with another); unset: open, as scrapers inside a cluster expect',
  },
  TRUSTED_DOCUMENTS: {
    meaning:
      "path of a `sha256 → document` JSON manifest (GraphQL Code Generator's `persisted-documents.json`): only those documents run, named by `documentId` or `extensions.persistedQuery.sha256Hash`; unset: any document (see Trusted documents)",
  },
  EVENT_RETENTION_MS: {
    duration: true,
    shown: 'unset (kept for ever)',
    meaning:
      'events older than this are deleted in small batches by a sweep that runs every quarter of it (at most every minute); a replay from before the oldest kept event gets `EVENTS_EXPIRED`',
  },
  CACHE_MEMORY_MB: {
    min: 1,
    shown: "a quarter of V8's heap limit, at most `128`",
    meaning:
      "memory for the in-process caches (message parts, rows and pages, session rows on PGlite, window hints, leading rows, API keys, subscription selections, the event streams' kept reads on PGlite, long texts' token counts), split among them in fixed shares",
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;

/** Variables earlier versions read, now constants or derived; `start.ts` (what `main.ts` runs) warns when one is set. */
export const RETIRED_VARIABLES = [
  'PGLITE_SHARED_BUFFERS_MB',
  'QUERY_JIT_AFTER_USES',
  'QUERY_JIT_MAX_FIELDS',
  'QUERY_JIT_MAX_DOCUMENTS',
  'HEAP_GROWING_PERCENT',
  'ALLOCATION_SITE_PRETENURING',
  'IDLE_GC',
  'PARTS_CACHE_MAX_CHARS',
  'ROWS_CACHE_MAX_ROWS',
  'ROWS_CACHE_MAX_ROWS_PER_SESSION',
  'PAGE_CACHE_MAX_CHARS',
  'SESSION_CACHE_MAX_ROWS',
  'WINDOW_HINTS_MAX',
  'API_KEY_CACHE_MAX',
  'SUBSCRIPTION_SHAPES_MAX',
  'TURN_SWEEP_INTERVAL_MS',
  'READY_TIMEOUT_MS',
];

export class ConfigError extends Error {}

const LOG_LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** Parses and validates the variables of SETTINGS once. Throws a ConfigError naming the variable at fault. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const read = (name: SettingName) => env[name]?.trim() || undefined;
  const production = read('NODE_ENV') === 'production';
  const dataDirRaw = read('DATA_DIR') ?? './.data';
  const databaseUrl = readUrl(read('DATABASE_URL'), 'DATABASE_URL', /^postgres(ql)?:\/\/.+/, 'a postgres:// or postgresql://');
  const databaseReplicaUrls = (read('DATABASE_REPLICA_URLS') ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean)
    .map((url) => readUrl(url, 'DATABASE_REPLICA_URLS', /^postgres(ql)?:\/\/.+/, 'a postgres:// or postgresql://') as string);
  if (databaseReplicaUrls.length && !databaseUrl) throw new ConfigError('DATABASE_REPLICA_URLS needs DATABASE_URL (the primary).');
  const redisUrl = readUrl(read('REDIS_URL'), 'REDIS_URL', /^rediss?:\/\/.+/, 'a redis:// or rediss://');

  const logLevel = (read('LOG_LEVEL')?.toLowerCase() ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${env.LOG_LEVEL}").`);
  }

  const turnTimeoutMs = parseInteger(env, 'TURN_TIMEOUT_MS');
  const cacheMemoryMb = read('CACHE_MEMORY_MB') ? parseInteger(env, 'CACHE_MEMORY_MB') : defaultCacheMemoryMb();
  return {
    port: parseInteger(env, 'PORT'),
    host: read('HOST') ?? '0.0.0.0',
    dataDir: dataDirRaw.startsWith('memory://') ? dataDirRaw : resolve(dataDirRaw),
    pgliteSharedBuffersMb: DEFAULT_PGLITE_SHARED_BUFFERS_MB,
    databaseUrl,
    databaseReplicaUrls,
    replicaMaxLagMs: REPLICA_MAX_LAG_MS,
    redisUrl,
    redisClusterNodes: parseClusterNodes(read('REDIS_CLUSTER_NODES'), env.REDIS_PREFIX),
    redisPrefix: env.REDIS_PREFIX ?? 'session-graph:',
    logLevel,
    apiKeys: parseApiKeys(read('API_KEYS')),
    turnTimeoutMs,
    turnSweepIntervalMs: turnSweepInterval(turnTimeoutMs),
    production,
    caches: cacheSizes(cacheMemoryMb, parseInteger(env, 'API_KEY_CACHE_TTL_MS')),
    authRequired: parseBoolean(env, 'AUTH_REQUIRED') ?? (production ? true : null),
    corsOrigins: parseOrigins(read('CORS_ORIGINS')),
    rateLimit: { requests: parseInteger(env, 'RATE_LIMIT'), windowMs: parseInteger(env, 'RATE_LIMIT_WINDOW_MS') },
    graphiql: parseBoolean(env, 'GRAPHIQL') ?? !production,
    shutdownGraceMs: parseInteger(env, 'SHUTDOWN_GRACE_MS'),
    timeouts: {
      headersMs: parseInteger(env, 'HEADERS_TIMEOUT_MS'),
      requestMs: parseInteger(env, 'REQUEST_TIMEOUT_MS'),
      keepAliveMs: parseInteger(env, 'KEEP_ALIVE_TIMEOUT_MS'),
      idleMs: parseInteger(env, 'IDLE_TIMEOUT_MS'),
    },
    readyTimeoutMs: READY_TIMEOUT_MS,
    maxStringChars: read('MAX_STRING_CHARS') ? parseInteger(env, 'MAX_STRING_CHARS') : null,
    queryJit: { ...DEFAULT_QUERY_JIT },
    metricsToken: read('METRICS_TOKEN') ?? null,
    trustedDocuments: read('TRUSTED_DOCUMENTS') ? resolve(read('TRUSTED_DOCUMENTS')!) : null,
    eventRetentionMs: read('EVENT_RETENTION_MS') ? parseInteger(env, 'EVENT_RETENTION_MS') : null,
  };
}

/** Names of RETIRED_VARIABLES set in `env`. */
export function retiredVariablesSet(env: NodeJS.ProcessEnv = process.env): string[] {
  return RETIRED_VARIABLES.filter((name) => env[name]?.trim());
}

function parseBoolean(env: NodeJS.ProcessEnv, name: SettingName): boolean | null {
  const raw = env[name]?.trim().toLowerCase();
  if (!raw) return null;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false (got "${env[name]}").`);
}

/** An integer setting within its SETTINGS bounds (a duration: 1 ms to a day, setInterval's limit being about 24.8 days); unset: its default. */
function parseInteger(env: NodeJS.ProcessEnv, name: SettingName): number {
  const setting: Setting = SETTINGS[name];
  const raw = env[name]?.trim();
  if (!raw) return setting.integer ?? 0;
  const value = Number(raw);
  if (setting.duration) {
    if (!Number.isInteger(value) || value < 1 || value > 86_400_000) {
      throw new ConfigError(`${name} must be a whole number of milliseconds from 1 to 86400000 (got "${raw}").`);
    }
    return value;
  }
  const min = setting.min ?? 0;
  const max = setting.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`${name} must be an integer ${range} (got "${env[name]}").`);
  }
  return value;
}

function readUrl(url: string | undefined, name: SettingName, scheme: RegExp, kind: string): string | null {
  if (!url) return null;
  if (!scheme.test(url)) throw new ConfigError(`${name} must be ${kind} URL (got "${redact(url)}").`);
  try {
    new URL(url);
  } catch {
    throw new ConfigError(`${name} is not a valid URL.`);
  }
  return url;
}

/** `host:port,…`; a prefix with a `{` would put every channel and key in one slot. */
function parseClusterNodes(raw: string | undefined, prefix: string | undefined): string[] | null {
  if (!raw) return null;
  const nodes = raw.split(',').map((node) => node.trim());
  const bad = nodes.find((node) => !/^[^\s:/]+:\d{1,5}$/.test(node));
  if (bad !== undefined) throw new ConfigError(`REDIS_CLUSTER_NODES must be comma-separated host:port seeds (got "${bad}").`);
  if (prefix?.includes('{')) throw new ConfigError('REDIS_PREFIX must not contain "{" with REDIS_CLUSTER_NODES (a hash tag).');
  return nodes;
}

function parseOrigins(raw: string | undefined): string[] {
  if (!raw) return [];
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

/** `workspace:key` (full scope) or `workspace:key:read` / `workspace:key:full`, comma-separated. */
function parseApiKeys(raw: string | undefined): ApiKeyConfig[] {
  if (!raw) return [];
  return raw.split(',').map((entry) => {
    const at = entry.indexOf(':');
    const workspace = entry.slice(0, at).trim();
    let key = entry.slice(at + 1).trim();
    let scope: KeyScope = 'FULL';
    const suffix = /:(read|full)$/i.exec(key);
    if (suffix) {
      scope = suffix[1].toUpperCase() as KeyScope;
      key = key.slice(0, suffix.index);
    }
    if (at <= 0 || !workspace || key.length < 16) {
      throw new ConfigError(
        'API_KEYS must be comma-separated workspace:key pairs (a `:read` suffix makes a read-only key), each key at least 16 characters.',
      );
    }
    // `sgs_` is how share tokens begin (createShareLink): the server looks such a value up as one.
    if (key.startsWith('sgs_')) throw new ConfigError('API_KEYS: a key must not begin with `sgs_` (the prefix of share tokens).');
    return { workspace, key, scope };
  });
}

/** A URL with its password hidden, for logs and errors. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
