/**
 * Plain SQL on the app's database, beside Prisma, for the stores only: the hot paths (appends,
 * forks, assembly and page reads, turns, the event log), where Prisma 7's per-statement cost was
 * as large as the statements themselves, and what Prisma cannot say. The one rule for reaching
 * data is in docs/architecture.md ("Reaching data"). Rows come back as Prisma would give them for
 * the same columns: timestamps
 * (stored as `TIMESTAMP(3)`, UTC) as `Date`, `BIGINT` as `bigint`, JSON parsed, arrays as arrays,
 * enums as their names.
 */
import type { PGlite, Transaction as PGliteTransaction } from '@electric-sql/pglite';
import type pg from 'pg';
import type { Prisma } from '../generated/prisma/client.js';
import { PgliteStatements } from './pglite-statements.js';

/** Runs statements with `$1`-style parameters. */
export interface SqlClient {
  query<T = Record<string, unknown>>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<T[]>;
  /** The database's write count (`Sql.writes`), on the `reads` client of a database this process alone writes. */
  writes?(): number | null;
}

export interface QueryOptions {
  /**
   * A name for a hot statement of fixed text (`sg_` and lower-case letters, digits, underscores):
   * the database parses and plans it once and then only binds and runs it, which saves most of its
   * work for a complex one-statement write. On PostgreSQL it is a named prepared statement on each
   * pooled connection; on PGlite, one on its one connection (`PgliteStatements`). One name, one text.
   * Ignored inside Prisma transactions.
   */
  name?: string;
}

/** The database as plain SQL: single statements, or a transaction on one connection. */
export interface Sql extends SqlClient {
  /**
   * Runs `work` in a transaction (BEGIN … COMMIT on one connection; ROLLBACK when it throws).
   * Retrying is the caller's choice: see `isRetryableSqlError`.
   */
  transaction<T>(work: (sql: SqlClient) => Promise<T>): Promise<T>;
  /**
   * The same database for statements that only read (no write, no lock, no function that writes):
   * they do not move `writes()`. One object for the app's life (what shares reads keys on it).
   */
  readonly reads: SqlClient;
  /**
   * How many writes this process has begun or ended, when it is the database's only writer (PGlite:
   * one process owns its folder); null on PostgreSQL, where other instances write too. A row read
   * while it stood at N is current for as long as it stays at N (caches/session-rows.ts).
   */
  writes(): number | null;
  /**
   * Told how much message text a statement rewrote (characters, about bytes), when the
   * database reclaims dead row versions only when asked (PGlite, which runs no autovacuum: see
   * `PgliteVacuum`); absent on PostgreSQL, whose autovacuum does it.
   */
  rewroteMessageText?(bytes: number): void;
  /**
   * The database is one connection in this process (PGlite): a statement runs only while no
   * transaction is open, so it never waits for a row lock another transaction holds.
   */
  readonly oneConnection: boolean;
}

/** A Prisma interactive transaction. */
export type Tx = Prisma.TransactionClient;

/**
 * Where a store's statement runs: a Prisma transaction or a plain SQL one. The statements shared
 * by both kinds of write (session locks, the event log, the applicable compaction) take either.
 */
export type SqlTarget = Tx | SqlClient;

/** `db` as plain SQL (`$1` parameters); a Prisma transaction runs it with `$queryRawUnsafe`. */
export function asSql(db: SqlTarget): SqlClient {
  if ('query' in db && typeof db.query === 'function') return db as SqlClient;
  const tx = db as Tx;
  return { query: <T>(text: string, values: readonly unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...values) };
}

/**
 * The parameters of one statement, numbered as they are added: a fragment built elsewhere (a
 * subquery) takes its own placeholders from the same list, so no file hard-codes another's `$n`.
 */
export class SqlParams {
  readonly values: unknown[] = [];

  /** Adds `value` and returns its placeholder (`$n`), with `cast` appended when given. */
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

/** What counts the statements (the app's QueryCounter); `record` may return what to call when the statement is done (a trace span's end). */
export interface StatementRecorder {
  record(sql: string): (() => void) | undefined;
}

/** Runs a statement recorded by `recorder`, and tells it when the statement is done if it asked. */
function recorded<T>(recorder: StatementRecorder, text: string, run: () => Promise<T>): Promise<T> {
  const done = recorder.record(text);
  return done ? run().finally(done) : run();
}

const TIMESTAMP = 1114;
const TIMESTAMP_ARRAY = 1115;
const INT8 = 20;
const NUMERIC = 1700;

/** `2026-11-22 15:04:05.123` (a TIMESTAMP without zone, written in UTC) as a Date. */
export function parseUtcTimestamp(text: string): Date {
  if (text === 'infinity' || text === '-infinity') return new Date(text === 'infinity' ? 8.64e15 : -8.64e15);
  return new Date(`${text.replace(' ', 'T')}Z`);
}

function parseTimestampArray(text: string): (Date | null)[] {
  if (text === '{}') return [];
  return text
    .slice(1, -1)
    .split(',')
    .map((item) => (item === 'NULL' ? null : parseUtcTimestamp(item.replace(/^"|"$/g, ''))));
}

/** Text-format parsers that differ from the drivers' defaults (which read timestamps as local time). */
const PARSERS: Record<number, (text: string) => unknown> = {
  [TIMESTAMP]: parseUtcTimestamp,
  [TIMESTAMP_ARRAY]: parseTimestampArray,
  [INT8]: (text) => BigInt(text),
  [NUMERIC]: (text) => text,
};

export function createPgSql(pool: pg.Pool, recorder: StatementRecorder, pgTypes: typeof pg.types): Sql {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      PARSERS[oid] ?? pgTypes.getTypeParser(oid, format as 'text')) as typeof pgTypes.getTypeParser,
  };
  const run = async <T>(client: pg.Pool | pg.PoolClient, text: string, values: readonly unknown[] = [], name?: string) => {
    const result = await recorded(recorder, text, () => client.query({ text, values: values as unknown[], types, name }));
    return result.rows as T[];
  };
  const query: SqlClient['query'] = (text, values, options) => run(pool, text, values, options?.name);
  return {
    query,
    reads: { query },
    writes: () => null,
    oneConnection: false,
    async transaction(work) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        try {
          const result = await work({ query: (text, values, options) => run(client, text, values, options?.name) });
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch((rollbackError: Error) => {
            broken = rollbackError;
          });
          throw error;
        }
      } finally {
        // A connection that could not roll back is destroyed, not returned to the pool.
        client.release(broken);
      }
    },
  };
}

/**
 * Counts the writes on a PGlite instance, whoever sends them (this module, the Prisma adapter,
 * migrations): every `query`, `exec` and `transaction` call on it moves the count when it begins
 * and again when it ends, except the statements sent through the returned `read`. Patches the
 * instance, so call it before anything else holds it.
 */
export function trackPgliteWrites(pglite: PGlite): {
  writes(): number;
  read: PGlite['query'];
  /** `call` counted as a write (what this module sends to PGlite other than through `query`). */
  counted<A extends unknown[], R>(call: (...args: A) => Promise<R>): (...args: A) => Promise<R>;
} {
  let writes = 0;
  const read = pglite.query.bind(pglite);
  const exec = pglite.exec.bind(pglite);
  const transaction = pglite.transaction.bind(pglite);
  const counted =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      writes++;
      try {
        return await call(...args);
      } finally {
        writes++;
      }
    };
  Object.assign(pglite, { query: counted(read), exec: counted(exec), transaction: counted(transaction) });
  return { writes: () => writes, read, counted };
}

export interface PgliteSqlOptions {
  /** Rewritten message text after which `VACUUM "Message"` runs (`PgliteVacuum`). */
  vacuumAfterBytes?: number;
  /**
   * Named statements (`QueryOptions.name`) prepared on PGlite's connection and run as one
   * Bind/Execute/Sync message (`PgliteStatements`; the default). False: every statement through
   * PGlite's `query`, the name ignored.
   */
  preparedStatements?: boolean;
}

export function createPgliteSql(pglite: PGlite, recorder: StatementRecorder, options: PgliteSqlOptions = {}): Sql {
  const tracker = trackPgliteWrites(pglite);
  const statements = options.preparedStatements === false ? null : new PgliteStatements(pglite, PARSERS);
  const vacuum = new PgliteVacuum(pglite, options.vacuumAfterBytes ?? VACUUM_AFTER_BYTES);
  const parsing = { parsers: PARSERS };
  const run = async <T>(client: Pick<PGlite | PGliteTransaction, 'query'>, text: string, values: readonly unknown[] = []) => {
    const result = await recorded(recorder, text, () => client.query<T>(text, values as unknown[], parsing));
    return result.rows;
  };
  /** A named statement, prepared (outside a transaction) on its first use; one that cannot be is sent as text. */
  const named = async <T>(
    client: Pick<PGlite, 'query'>,
    text: string,
    values: readonly unknown[] = [],
    name: string | undefined,
    counted: boolean,
  ) => {
    const statement = name && statements ? await statements.prepare(name, text) : null;
    if (!statement || !statements) return run<T>(client, text, values);
    if (!counted) return recorded(recorder, text, () => statements.run<T>(statement, values, false));
    return recorded(
      recorder,
      text,
      tracker.counted(() => statements.run<T>(statement, values, false)),
    );
  };
  const uncounted = { query: tracker.read };
  return {
    query: (text, values, queryOptions) => named(pglite, text, values, queryOptions?.name, true),
    // PGlite is one connection: its transaction holds it, and every other query waits. A statement
    // is only prepared outside a transaction; inside one, a prepared statement runs under the
    // query lock alone (the transaction holds the other).
    transaction: (work) =>
      pglite.transaction((tx) =>
        work({
          query: async (text, values, queryOptions) => {
            const statement = statements?.made(queryOptions?.name, text);
            if (!statement || !statements) return run(tx, text, values);
            return recorded(recorder, text, () => statements.run(statement, values ?? [], true));
          },
        }),
      ),
    reads: {
      query: (text, values, queryOptions) => named(uncounted, text, values, queryOptions?.name, false),
      writes: tracker.writes,
    },
    writes: tracker.writes,
    rewroteMessageText: (bytes) => vacuum.rewrote(bytes),
    oneConnection: true,
  };
}

/** Rewritten message text (bytes) after which PGlite vacuums the Message table (`PgliteVacuum`). */
export const VACUUM_AFTER_BYTES = 8 << 20;

/**
 * PGlite runs no autovacuum: every old version of a row stays in the data folder, TOASTed values
 * included, until a VACUUM. A streamed reply rewrites its message (text and parts) at every token,
 * so without one a folder grows with every reply for good. So once the message text rewritten
 * since the last one reaches `afterBytes`, `VACUUM "Message"` runs, next on the connection: its
 * cost follows the dead data, and the space it frees is reused by the next versions, so the table
 * stops growing. One at a time; a failure is retried by the next.
 */
class PgliteVacuum {
  private rewritten = 0;
  private running = false;

  constructor(
    private readonly pglite: PGlite,
    private readonly afterBytes: number,
  ) {}

  rewrote(bytes: number) {
    this.rewritten += bytes;
    if (this.running || this.rewritten < this.afterBytes || this.pglite.closed) return;
    this.running = true;
    this.rewritten = 0;
    // Queued on PGlite's one connection now, behind the statements already sent: a scheduled task
    // could wait behind a whole stream of updates that never leave the microtask queue.
    const done = () => {
      this.running = false;
    };
    this.pglite.exec('VACUUM "Message"').then(done, done);
  }
}

/** A serialization failure or a deadlock: the transaction can be run again from the start. */
export function isRetryableSqlError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}
