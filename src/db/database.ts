import type { PGlite } from '@electric-sql/pglite';
import type { SqlDriverAdapter, SqlDriverAdapterFactory, Transaction } from '@prisma/driver-adapter-utils';
import { type AppConfig, redact } from '../config.js';
import { PrismaClient } from '../generated/prisma/client.js';
import { openPglite, type PgliteDump } from './pglite-open.js';
import { applyMigrations, type MigrationConnection, type MigrationReport } from './migrate.js';
import { type Replica, ReplicaSet, routedAdapter, routedSql } from './replicas.js';
import { createPgliteSql, createPgSql, type Sql } from './sql.js';

/** Counts the SQL statements sent to the database (tests use it to catch N+1 regressions). */
export class QueryCounter {
  count = 0;
  statements: string[] = [];
  /** Starts a trace span for a statement and returns its end (tracing on, see graphql/tracing.ts). */
  statementSpans: ((sql: string) => (() => void) | undefined) | null = null;
  record(sql: string): (() => void) | undefined {
    this.count++;
    if (this.statements.length < 1000) this.statements.push(sql);
    return this.statementSpans?.(sql);
  }
  reset() {
    this.count = 0;
    this.statements = [];
  }
}

export interface Database {
  /** Which backend: real PostgreSQL, or PGlite in process (whose statements run on the request thread). */
  kind: DatabaseOptions['kind'];
  /** One line for the start-up log: where the data lives. */
  description: string;
  prisma: PrismaClient;
  /** Plain SQL on the same database, for the hot paths (see sql.ts). */
  sql: Sql;
  queries: QueryCounter;
  /** The streaming replicas queries are read from (DATABASE_REPLICA_URLS); null: none, the primary serves all. */
  replicas: ReplicaSet | null;
  migrate(): Promise<MigrationReport>;
  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseOptions =
  | {
      kind: 'postgres';
      url: string;
      /** Streaming replicas of `url` (`ReplicaSet`), and the lag past which one is skipped. */
      replicaUrls?: string[];
      replicaMaxLagMs?: number;
    }
  | {
      kind: 'pglite';
      dataDir: string;
      sharedBuffersMb?: number;
      /** Named statements prepared on PGlite's connection (`PgliteStatements`, the default); false: PGlite's `query` for every statement. */
      pgliteStatements?: boolean;
      /**
       * A dump the new database starts as a copy of, instead of initdb (pglite-open.ts `PgliteDump`
       * states the contract): only for a database that does not exist yet, by the same PGlite.
       */
      from?: PgliteDump;
    };

/**
 * The database the configuration names: PostgreSQL when DATABASE_URL is set, else PGlite in DATA_DIR
 * (`pgliteStatements`: see `DatabaseOptions`).
 */
export function databaseOptionsOf(
  config: Pick<AppConfig, 'databaseUrl' | 'dataDir' | 'pgliteSharedBuffersMb'> &
    Partial<Pick<AppConfig, 'databaseReplicaUrls' | 'replicaMaxLagMs'>>,
  pgliteStatements = true,
): DatabaseOptions {
  return config.databaseUrl
    ? { kind: 'postgres', url: config.databaseUrl, replicaUrls: config.databaseReplicaUrls, replicaMaxLagMs: config.replicaMaxLagMs }
    : { kind: 'pglite', dataDir: config.dataDir, sharedBuffersMb: config.pgliteSharedBuffersMb, pgliteStatements };
}

const TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 20_000 };

/**
 * Opens the database: real PostgreSQL through `pg` and @prisma/adapter-pg, or PGlite in process.
 * The same schema, migrations and SQL serve both.
 */
export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  const queries = new QueryCounter();
  // Each backend's driver is loaded only when it is used (start-up time, and memory: PGlite's
  // module alone is tens of MB that a PostgreSQL server never needs).
  if (options.kind === 'postgres') {
    const [{ default: pg }, { PrismaPg }] = await Promise.all([import('pg'), import('@prisma/adapter-pg')]);
    const pool = new pg.Pool({ connectionString: options.url, max: 10 });
    pool.on('error', () => {
      // An idle client lost its connection; the pool replaces it and the next query reports errors.
    });
    const sql = createPgSql(pool, queries, pg.types);
    // Replicas: their own pools, polled for what they have replayed; statements routed per operation.
    const replicaPools = (options.replicaUrls ?? []).map((url) => {
      const replicaPool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 2000 });
      replicaPool.on('error', () => {});
      return replicaPool;
    });
    const replicas = replicaPools.length
      ? new ReplicaSet(
          pool,
          replicaPools.map(
            (replicaPool, index): Replica => ({
              index,
              pool: replicaPool,
              sql: createPgSql(replicaPool, queries, pg.types),
              replayed: 0n,
              problem: null,
            }),
          ),
          options.replicaMaxLagMs ?? 5000,
        )
      : null;
    const adapter = replicas
      ? routedAdapter(
          new PrismaPg(pool),
          replicaPools.map((replicaPool) => new PrismaPg(replicaPool)),
          replicas,
        )
      : new PrismaPg(pool);
    const prisma = new PrismaClient({ adapter: countingAdapter(adapter, queries), transactionOptions: TRANSACTION_OPTIONS });
    await replicas?.start();
    return {
      kind: 'postgres',
      description: `PostgreSQL at ${redact(options.url)}${replicaPools.length ? ` with ${replicaPools.length} replica(s)` : ''}`,
      prisma,
      sql: replicas ? routedSql(sql, replicas) : sql,
      queries,
      replicas,
      async migrate() {
        const client = await pool.connect();
        try {
          return await applyMigrations({
            query: async (sql, params) => (await client.query(sql, params)).rows,
            exec: async (sql) => void (await client.query(sql)),
          });
        } finally {
          client.release();
        }
      },
      async ping() {
        await pool.query('SELECT 1');
      },
      async close() {
        await prisma.$disconnect();
        await replicas?.close();
        await pool.end();
      },
    };
  }

  const [{ PrismaPGlite }, { pglite, description }] = await Promise.all([
    import('pglite-prisma-adapter'),
    openPglite(options.dataDir, options.sharedBuffersMb, options.from),
  ]);
  const prisma = new PrismaClient({
    adapter: countingAdapter(new PrismaPGlite(pglite), queries),
    transactionOptions: TRANSACTION_OPTIONS,
  });
  return {
    kind: 'pglite',
    description,
    prisma,
    sql: createPgliteSql(pglite, queries, { preparedStatements: options.pgliteStatements ?? true }),
    queries,
    replicas: null,
    async migrate() {
      const report = await applyMigrations(pgliteConnection(pglite));
      // After the migrations, so the arrays of the enums they create are known.
      await trimPgliteParsers(pglite, report.applied.length > 0);
      return report;
    },
    async ping() {
      await pglite.query('SELECT 1');
    },
    async close() {
      await prisma.$disconnect();
      if (!pglite.closed) await pglite.close();
    },
  };
}

/**
 * Element type categories whose arrays keep a parser (pg_type.typcategory): strings, numbers,
 * booleans, dates and times, enums, and the user-defined kind (json, jsonb, uuid). The others
 * (geometry, network, bit strings, ranges, intervals, internal types) are nothing this schema has.
 */
const ARRAY_ELEMENT_CATEGORIES = ['S', 'N', 'B', 'D', 'E', 'U'];

/**
 * PGlite's `query()` copies its instance's whole parser table into a new object for every
 * statement (`{ ...pglite.parsers, ...options.parsers }`), and that table holds a parser for the
 * array of every type in the catalog. Only the parsers of what this schema can return are kept: every scalar one, and the arrays of strings, numbers, booleans, times, enums, json and
 * uuid (about 50). A statement that returned an array of another kind would get its text.
 */
export async function trimPgliteParsers(pglite: PGlite, typesCreated = true): Promise<void> {
  // The arrays of the types created since PGlite started (the migrations' enums) too, as on a
  // folder opened again, so that both read the same. With no type created since (no migration
  // applied), PGlite's own reading at its start has them all.
  if (typesCreated) await pglite.refreshArrayTypes();
  const { rows } = await pglite.query<{ oid: number; category: string }>(
    `SELECT a.oid::int AS oid, e.typcategory AS category
     FROM pg_catalog.pg_type a JOIN pg_catalog.pg_type e ON e.oid = a.typelem
     WHERE a.typcategory = 'A'`,
  );
  const arrays = new Map(rows.map((r) => [String(r.oid), r.category]));
  const kept: PGlite['parsers'] = {};
  for (const [key, parser] of Object.entries(pglite.parsers)) {
    const category = arrays.get(key);
    if (category === undefined || ARRAY_ELEMENT_CATEGORIES.includes(category)) kept[key as unknown as number] = parser;
  }
  pglite.parsers = kept;
}

export function pgliteConnection(pglite: PGlite): MigrationConnection {
  return {
    query: async <T>(sql: string, params?: unknown[]) => (await pglite.query<T>(sql, params)).rows,
    exec: async (sql: string) => void (await pglite.exec(sql)),
  };
}

function countingAdapter(factory: SqlDriverAdapterFactory, counter: QueryCounter): SqlDriverAdapterFactory {
  const wrapQueryable = <T extends SqlDriverAdapter | Transaction>(target: T): T =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver);
        if (prop === 'queryRaw' || prop === 'executeRaw') {
          return (query: { sql: string }) => {
            const done = counter.record(query.sql);
            const result = (value as (q: unknown) => Promise<unknown>).call(obj, query);
            return done ? result.finally(done) : result;
          };
        }
        if (prop === 'startTransaction') {
          return async (...args: unknown[]) => wrapQueryable(await (value as (...a: unknown[]) => Promise<Transaction>).apply(obj, args));
        }
        return typeof value === 'function' ? value.bind(obj) : value;
      },
    });
  return new Proxy(factory, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'connect') return async () => wrapQueryable(await (value as () => Promise<SqlDriverAdapter>).call(obj));
      return typeof value === 'function' ? value.bind(obj) : value;
    },
  });
}
