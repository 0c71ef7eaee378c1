import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, inject } from 'vitest';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type ExecutionResult } from 'graphql';
import pg from 'pg';
import { ALL_DEVIATIONS, buildApp, type App, type BuildAppOptions, type Deviations, NO_DEVIATIONS } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import { createDatabase } from '../../src/db/database.js';
import { DEFAULT_STRING_CHARS, textCaps } from '../../src/domain/limits.js';

/**
 * Where the integration tests run: in-memory PGlite and in-memory pub/sub by default; real
 * PostgreSQL when TEST_DATABASE_URL is set (each app gets a fresh database, dropped afterwards) and
 * real Redis when TEST_REDIS_URL is set (each app gets its own channel prefix).
 */
export const backend = {
  postgresUrl: process.env.TEST_DATABASE_URL || null,
  redisUrl: process.env.TEST_REDIS_URL || null,
  get label() {
    return `${this.postgresUrl ? 'postgres' : 'pglite'}+${this.redisUrl ? 'redis' : 'memory'}`;
  },
  /** The caps a test app on this backend has by default (the string cap is 1 Mi on PostgreSQL, 256 Ki on PGlite). */
  get caps() {
    return textCaps(DEFAULT_STRING_CHARS[this.postgresUrl ? 'postgres' : 'pglite']);
  },
};

/**
 * TEST_DATABASE_URL naming a primary and TEST_REPLICA_URLS its streaming replicas (.ci/run's replica
 * step): every test app on the backend's databases reads its queries from the replicas (the same
 * database name on each), and `gql` sends back the newest consistency token any mutation got, as a
 * client that must read its writes does. An app of a test's own database (`databaseUrl`) is left as
 * the test builds it.
 */
const suiteReplicas = backend.postgresUrl ? (process.env.TEST_REPLICA_URLS ?? '').split(',').filter(Boolean) : [];
let newestToken: { text: string; position: bigint } | null = null;
const appsSendingTokens = new WeakSet<App>();

function keepToken(token: unknown) {
  if (typeof token !== 'string') return;
  const [high, low] = token.split('/').map((part) => BigInt(`0x${part}`));
  const position = (high << 32n) | low;
  if (!newestToken || position > newestToken.position) newestToken = { text: token, position };
}

export const API_KEYS = {
  alpha: 'alpha-key-0123456789abcdef',
  beta: 'beta-key-0123456789abcdef0',
};

/** Two workspaces, alpha and beta, each with its key: the `apiKeys` of the tests that check isolation. */
export const TWO_WORKSPACES: AppConfig['apiKeys'] = [
  { workspace: 'alpha', key: API_KEYS.alpha },
  { workspace: 'beta', key: API_KEYS.beta },
];

export interface TestApp extends App {
  /** The GraphQL endpoint of the listening server (on 127.0.0.1, a free port). */
  url: string;
  /** The database URL when on PostgreSQL (so a second instance can share it). */
  databaseUrl: string | null;
  redisPrefix: string;
}

const deviationsSetting = process.env.TEST_DEVIATIONS?.trim() || 'on';
if (deviationsSetting !== 'on' && deviationsSetting !== 'off') {
  throw new Error(`TEST_DEVIATIONS must be "off" or "on" (the default), not "${deviationsSetting}"`);
}

/**
 * TEST_DEVIATIONS=off: every test app is built with every deviation from the obvious
 * implementation off (`NO_DEVIATIONS`: Yoga's request pipeline, graphql-ws's `useServer`,
 * graphql-js, PGlite's `query`), so the suite checks that the obvious path stays correct;
 * otherwise all are on, as in production. Read here only, never by the server. A test of one
 * deviation turns it on with its own `deviations`; tests that start the server as a child process
 * (`npm start`, process.test.ts) run it with the defaults.
 */
export const deviationsOff = deviationsSetting === 'off';

/** The `deviations` every test app gets (`BuildAppOptions.deviations`), before a test's own. */
export const testDeviations: Deviations = deviationsOff ? NO_DEVIATIONS : ALL_DEVIATIONS;

/**
 * A dump read from its file once per test process, and handed to every database as the same
 * bytes. PGlite (the pinned 0.4.6) reads a dump with `arrayBuffer()` and copies each file it
 * untars out of it, writing nothing back, so one buffer serves every copy; a plain Blob's
 * `arrayBuffer()` reads the whole dump into a new buffer for each app.
 */
class ReadOnce extends Blob {
  readonly #bytes: ArrayBuffer;
  constructor(path: string) {
    const file = readFileSync(path);
    const bytes = file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer;
    super([bytes]);
    this.#bytes = bytes;
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes);
  }
}

const dumps: { migrated?: Blob; initialized?: Blob } = {};

/**
 * The migrated database test/global-setup.ts dumped (a `PgliteDump`, `createDatabase`'s `from`),
 * read once per test process.
 */
export function migratedPglite(): Blob {
  dumps.migrated ??= new ReadOnce(inject('migratedPglite'));
  return dumps.migrated;
}

/** The same database before the migrations, as initdb left it (a test of what an empty database does). */
export function initializedPglite(): Blob {
  dumps.initialized ??= new ReadOnce(inject('initializedPglite'));
  return dumps.initialized;
}

/**
 * A PGlite database for a test app (in memory unless `dataDir` names a folder), opened with the
 * test run's `pgliteStatements`. A new one starts as a copy of the run's migrated database (no
 * initdb, no migration to apply); a folder that already holds a database opens as it is.
 */
export function testPglite(dataDir = 'memory://', pgliteStatements = testDeviations.pgliteStatements) {
  const exists = !dataDir.startsWith('memory://') && existsSync(join(dataDir, 'PG_VERSION'));
  return createDatabase({ kind: 'pglite', dataDir, pgliteStatements, from: exists ? undefined : migratedPglite() });
}

export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  const defaults = loadConfig({ RATE_LIMIT: '0' });
  return {
    // The server's defaults outside production, without rate limiting (tests send bursts on purpose).
    ...defaults,
    port: 0,
    host: '127.0.0.1',
    dataDir: 'memory://',
    databaseUrl: null,
    redisUrl: backend.redisUrl,
    redisPrefix: `sgtest:${randomBytes(4).toString('hex')}:`,
    logLevel: 'silent',
    apiKeys: [],
    // The suite's fetch (undici) drops an idle pooled socket after 4 s; a server closing it at 5 s
    // races a request sent on it then, worst when one event loop runs both under load ("other side
    // closed"). A server that keeps sockets longer than the client never closes one under a request.
    timeouts: { ...defaults.timeouts, keepAliveMs: 30_000 },
    ...overrides,
  };
}

const createdDatabases: string[] = [];

/** A fresh, empty PostgreSQL database on the test server; returns its URL. */
export async function freshPostgresDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: backend.postgresUrl! });
  await admin.connect();
  const name = `sg_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  createdDatabases.push(name);
  const url = new URL(backend.postgresUrl!);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropTestDatabases() {
  if (!backend.postgresUrl || createdDatabases.length === 0) return;
  const admin = new pg.Client({ connectionString: backend.postgresUrl });
  await admin.connect();
  for (const name of createdDatabases.splice(0)) {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
  await admin.end();
}

/**
 * Builds an app on the test backend. Pass `shareWith` to build a second server instance on the
 * same database and Redis channels (multi-instance tests), `redisUrl` to use another Redis (a
 * private one for fault tests) or none (null).
 */
export async function createTestApp(
  options: {
    apiKeys?: AppConfig['apiKeys'];
    shareWith?: TestApp;
    /** A PostgreSQL database of the test's own (read-replicas.test.ts: a primary with a replica) instead of the backend's. */
    databaseUrl?: string;
    config?: Partial<AppConfig>;
    redisUrl?: string | null;
    /** Plugins after the app's own (`BuildAppOptions.plugins`). */
    plugins?: BuildAppOptions['plugins'];
    /** OpenTelemetry traces (`BuildAppOptions.tracing`). */
    tracing?: BuildAppOptions['tracing'];
    /** Deviations this test sets whatever TEST_DEVIATIONS says (a test of the deviation itself). */
    deviations?: Partial<Deviations>;
    /** Leave `warm()` to the test (the query compiler unloaded; the server listens all the same). */
    cold?: boolean;
  } = {},
): Promise<TestApp> {
  const redisPrefix = options.shareWith?.redisPrefix ?? testConfig().redisPrefix;
  let databaseUrl = options.databaseUrl ?? options.shareWith?.databaseUrl ?? null;
  const onReplicas = !options.databaseUrl && suiteReplicas.length > 0;
  if (!databaseUrl && backend.postgresUrl) databaseUrl = await freshPostgresDatabase();
  if (options.shareWith && !databaseUrl) throw new Error('a shared instance needs PostgreSQL (TEST_DATABASE_URL)');
  const config = testConfig({
    databaseUrl,
    redisPrefix,
    apiKeys: options.apiKeys ?? [],
    // Without keys, keyless for good: in the "auto" mode every instance re-checks now and then
    // whether a key exists, a statement that would land at random in the tests' statement counts.
    ...(options.apiKeys?.length ? {} : { authRequired: false }),
    ...(options.redisUrl !== undefined ? { redisUrl: options.redisUrl } : {}),
    ...(onReplicas
      ? {
          databaseReplicaUrls: suiteReplicas.map((url) =>
            Object.assign(new URL(url), { pathname: new URL(databaseUrl!).pathname }).toString(),
          ),
        }
      : {}),
    ...options.config,
  });
  const deviations = { ...testDeviations, ...options.deviations };
  const database = databaseUrl ? undefined : await testPglite('memory://', deviations.pgliteStatements);
  const app = await buildApp(config, { database, plugins: options.plugins, tracing: options.tracing, deviations });
  let url: string;
  if (options.cold) {
    // Listening without `listen()`, which would start loading the compiler.
    await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
    url = endpointOf(app)!;
  } else {
    url = await app.listen(0, '127.0.0.1');
    // As a server some time after its start: its query compiler loaded.
    await app.warm();
  }
  if (onReplicas) appsSendingTokens.add(app);
  return Object.assign(app, { databaseUrl, redisPrefix, url });
}

/**
 * Builds one app for the test file (`beforeAll`), handing it to `ready`, and closes it and drops
 * the file's test databases afterwards (`afterAll`).
 */
export function useTestApp(ready: (app: TestApp) => void | Promise<void>, options: Parameters<typeof createTestApp>[0] = {}) {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await createTestApp(options);
    await ready(app);
  });
  afterAll(async () => {
    await app?.close();
    await dropTestDatabases();
  });
}

export interface GqlOptions {
  apiKey?: string;
  headers?: Record<string, string>;
}

type Doc<R, V> = TypedDocumentNode<R, V> | string;

/** The GraphQL endpoint of the app's server, if it listens. */
function endpointOf(app: App): string | null {
  const address = app.server.listening ? (app.server.address() as AddressInfo | null) : null;
  if (!address) return null;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}${app.yoga.graphqlEndpoint}`;
}

/**
 * At most this many requests of the suite are open at once, as a client's connection pool holds
 * them: a test's thousand parallel calls would each open a connection and overflow the server's
 * listen backlog (ECONNRESET). The rest wait their turn, in order.
 */
const MAX_OPEN_REQUESTS = 64;
let openRequests = 0;
const waitingRequests: (() => void)[] = [];

async function overConnection(url: string, init: RequestInit): Promise<Response> {
  if (openRequests < MAX_OPEN_REQUESTS) openRequests++;
  else await new Promise<void>((resolve) => waitingRequests.push(resolve));
  try {
    const response = await fetch(url, init);
    // The slot is held until the body is read, as the connection is.
    const body = await response.arrayBuffer();
    return new Response(body, { status: response.status, headers: response.headers });
  } finally {
    const next = waitingRequests.shift();
    if (next) next();
    else openRequests--;
  }
}

/**
 * Runs an operation and returns the parsed body: over HTTP to the app's listening server, the entry
 * production takes (no `Origin`, so the fast path answers what it takes); through `yoga.fetch`
 * only for an app that does not listen.
 */
export async function gql<R, V>(
  app: App,
  document: Doc<R, V>,
  variables?: V,
  options: GqlOptions = {},
): Promise<ExecutionResult<R> & { status: number }> {
  const query = typeof document === 'string' ? document : print(document);
  const url = endpointOf(app);
  const send = url ? overConnection : app.yoga.fetch;
  const response = await send(url ?? 'http://localhost/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...(newestToken && appsSendingTokens.has(app) ? { 'x-consistency-token': newestToken.text } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as ExecutionResult<R>;
  keepToken(body.extensions?.consistencyToken);
  return { ...body, status: response.status };
}

/** Like `gql`, but fails with the query and the whole response when there is any error. */
export async function gqlOk<R, V>(app: App, document: Doc<R, V>, variables?: V, options: GqlOptions = {}): Promise<R> {
  const result = await gql(app, document, variables, options);
  if (result.errors?.length || !result.data) {
    const query = typeof document === 'string' ? document : print(document);
    throw new Error(
      `Expected no GraphQL errors.\nQuery:\n${query}\nVariables: ${JSON.stringify(variables)}\nResponse (${result.status}): ${JSON.stringify(result, null, 2)}`,
    );
  }
  return result.data;
}

/** Runs an operation that must fail, and returns its first error's code and message. */
export async function gqlError<R, V>(app: App, document: Doc<R, V>, variables?: V, options: GqlOptions = {}) {
  const result = await gql(app, document, variables, options);
  if (!result.errors?.length) {
    const query = typeof document === 'string' ? document : print(document);
    throw new Error(`Expected a GraphQL error.\nQuery:\n${query}\nResponse: ${JSON.stringify(result, null, 2)}`);
  }
  const [error] = result.errors;
  return { code: error.extensions?.code as string | undefined, message: error.message, errors: result.errors, data: result.data };
}

/** The database id inside a global ID (for tests that look at rows directly). */
export const rawIdOf = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').split(':').slice(1).join(':');

/** A global ID for a type and database id. */
export const globalIdOf = (typename: string, id: string) => Buffer.from(`${typename}:${id}`).toString('base64');
