/**
 * Streaming replicas of the PostgreSQL primary (DATABASE_REPLICA_URLS), and which one a statement
 * runs on. The GraphQL layer says, per operation, whether its statements may be read from a
 * replica (`ReplicaSet.onReplica`: a query, with the commit position its client has seen) or not
 * (`onPrimary`: a mutation, a subscription); the routed clients (`routedSql`, `routedAdapter`) read
 * that choice for each statement. No choice made (anything outside an operation: key checks,
 * sweeps, subscription streams, `/attachments`) is the primary.
 *
 * Guarantees: a transaction always runs on the primary; a statement that fails on a replica (down,
 * a write, a conflict with recovery) runs again on the primary; a replica serves an operation only
 * if it has replayed the client's position (read-your-writes) and what the primary had written
 * `maxLagMs` ago (bounded staleness). One replica serves a whole operation, so its reads are one
 * replica's consistent, monotonic view.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SqlDriverAdapterFactory, SqlQuery } from '@prisma/driver-adapter-utils';
import type pg from 'pg';
import type { QueryOptions, Sql, SqlClient } from './sql.js';

/** A WAL position (`pg_lsn`, `16/B374D848`) as a number; null when `text` is not one. */
export function parseLsn(text: string): bigint | null {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  return match ? (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`) : null;
}

/** A replica pool with its plain SQL, and what the last poll found. */
export interface Replica {
  /** Its place in DATABASE_REPLICA_URLS, from 0 (the metrics' and `/readyz`'s label). */
  index: number;
  pool: pg.Pool;
  sql: SqlClient;
  /** The position it had replayed at the last poll (0 before one answered). */
  replayed: bigint;
  /** Why it is skipped now: `down: …`, `lagging`, or null (it serves reads). */
  problem: string | null;
}

/** What runs where (the `/metrics` counter of statements by target). */
export interface RouteCounts {
  primary: number;
  replica: number;
  /** Statements that failed on a replica and ran again on the primary. */
  fallbacks: number;
}

const PRIMARY: { replica: Replica | null } = { replica: null };

/**
 * A connection-level failure (not the statement's fault): pg's error code (`08…` connection,
 * `57P…` shutting down, `E…` a socket's), or Prisma's adapter's error kind. The replica is then
 * skipped until a poll answers.
 */
const connectionLost = (error: unknown) => {
  const cause = (error as { cause?: { kind?: string; code?: string } }).cause;
  if (cause?.kind)
    return /NotReachable|ConnectionClosed|SocketTimeout|TooManyConnections/.test(cause.kind) || /^(08|57P)/.test(cause.code ?? '');
  const code = (error as { code?: unknown }).code;
  return typeof code !== 'string' || /^(08|57P|E[A-Z]+$)/.test(code);
};

export class ReplicaSet {
  readonly counts: RouteCounts = { primary: 0, replica: 0, fallbacks: 0 };
  private readonly routes = new AsyncLocalStorage<{ replica: Replica | null }>();
  /** The primary's position at each poll, oldest first, kept for `maxLagMs` and a bit. */
  private samples: { at: number; lsn: bigint }[] = [];
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  /** Told when a replica stops or starts serving reads (`buildApp` logs it). */
  onChange: ((replica: Replica, problem: string | null) => void) | null = null;

  constructor(
    private readonly primary: pg.Pool,
    readonly replicas: Replica[],
    private readonly maxLagMs: number,
    private readonly pollMs = 100,
  ) {
    for (const replica of replicas) replica.problem = 'down: not polled yet';
  }

  /** Polls now and then every `pollMs` (resolves after the first poll). */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    return this.poll();
  }

  /** The replica statements made now run on, or null (the primary). */
  current(): Replica | null {
    return this.routes.getStore()?.replica ?? null;
  }

  /** Runs `work` with every statement on the primary. */
  onPrimary<T>(work: () => T): T {
    return this.routes.run(PRIMARY, work);
  }

  /**
   * Runs `work` with its statements on one replica that has replayed `position` (0n: any) and is
   * within the lag bound, taken in turn; on the primary when none has.
   */
  onReplica<T>(position: bigint, work: () => T): T {
    const { replicas } = this;
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[(this.next + i) % replicas.length];
      if (replica.problem === null && replica.replayed >= position) {
        this.next = (this.next + i + 1) % replicas.length;
        return this.routes.run({ replica }, work);
      }
    }
    return this.routes.run(PRIMARY, work);
  }

  /** The primary's position now: every transaction committed before is at or before it (the consistency token). */
  async position(): Promise<string> {
    const { rows } = await this.primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    return rows[0].lsn;
  }

  /** `replica` failed a statement with `error`, which now runs on the primary. */
  failed(replica: Replica, error: unknown): void {
    this.counts.fallbacks++;
    if (connectionLost(error)) this.mark(replica, `down: ${(error as Error).message || (error as { code?: string }).code}`);
  }

  private mark(replica: Replica, problem: string | null): void {
    const changed = (replica.problem === null) !== (problem === null);
    replica.problem = problem;
    if (changed) this.onChange?.(replica, problem);
  }

  /** Whether every replica serves reads, and each one's state (`/readyz`). */
  status(): { ok: boolean; replicas: { replica: number; status: string; replayed: string }[] } {
    return {
      ok: this.replicas.every((r) => r.problem === null),
      replicas: this.replicas.map((r) => ({ replica: r.index, status: r.problem ?? 'ok', replayed: formatLsn(r.replayed) })),
    };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling?.catch(() => {});
    await Promise.all(this.replicas.map((r) => r.pool.end()));
  }

  /** Reads the primary's position and each replica's replayed one (one poll at a time). */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = null;
    });
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    const now = Date.now();
    const primary = await this.position().then(parseLsn, () => null);
    if (primary !== null) {
      this.samples.push({ at: now, lsn: primary });
      while (this.samples.length > 1 && this.samples[1].at <= now - this.maxLagMs) this.samples.shift();
    }
    // What the primary had written `maxLagMs` ago (none known yet: no bound).
    const bound = this.samples[0] && this.samples[0].at <= now - this.maxLagMs ? this.samples[0].lsn : 0n;
    const timeout = Math.max(this.maxLagMs, 1000);
    await Promise.all(
      this.replicas.map(async (replica) => {
        try {
          const { rows } = await within(
            replica.pool.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn'),
            timeout,
          );
          const lsn = rows[0].lsn === null ? null : parseLsn(rows[0].lsn);
          if (lsn === null) return this.mark(replica, 'down: not a replica (pg_last_wal_replay_lsn() is null)');
          replica.replayed = lsn;
          this.mark(replica, lsn < bound ? 'lagging' : null);
        } catch (error) {
          this.mark(replica, `down: ${(error as Error).message}`);
        }
      }),
    );
  }
}

function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `primary` with its single statements run on the replica the current operation was given
 * (`ReplicaSet.onReplica`), and again on the primary if they fail there; transactions, and
 * everything outside such an operation, on the primary.
 */
export function routedSql(primary: Sql, set: ReplicaSet): Sql {
  const query: SqlClient['query'] = <T>(text: string, values?: readonly unknown[], options?: QueryOptions) => {
    const replica = set.current();
    if (replica === null) {
      set.counts.primary++;
      return primary.query<T>(text, values, options);
    }
    set.counts.replica++;
    return replica.sql.query<T>(text, values, options).catch((error: unknown) => {
      set.failed(replica, error);
      set.counts.primary++;
      return primary.query<T>(text, values, options);
    });
  };
  return {
    query,
    reads: { query },
    writes: () => primary.writes(),
    oneConnection: primary.oneConnection,
    transaction: (work) => primary.transaction(work),
  };
}

/**
 * Prisma's driver adapter with `routedSql`'s rule: a single statement (`queryRaw`, `executeRaw`)
 * runs on the current operation's replica (`replicaAdapters`, one per replica, by index) and again
 * on the primary if it fails there; transactions and scripts run on the primary.
 */
export function routedAdapter(
  primary: SqlDriverAdapterFactory,
  replicaAdapters: SqlDriverAdapterFactory[],
  set: ReplicaSet,
): SqlDriverAdapterFactory {
  return new Proxy(primary, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop !== 'connect') return typeof value === 'function' ? value.bind(obj) : value;
      return async () => {
        const main = await obj.connect();
        const connected = await Promise.all(replicaAdapters.map((factory) => factory.connect()));
        const routed = (method: 'queryRaw' | 'executeRaw') => async (query: SqlQuery) => {
          const replica = set.current();
          if (replica !== null) {
            set.counts.replica++;
            try {
              return await (connected[replica.index][method] as (q: SqlQuery) => Promise<never>)(query);
            } catch (error) {
              set.failed(replica, error);
            }
          }
          set.counts.primary++;
          return (main[method] as (q: SqlQuery) => Promise<never>)(query);
        };
        const queryRaw = routed('queryRaw');
        const executeRaw = routed('executeRaw');
        return new Proxy(main, {
          get(target, key, r) {
            if (key === 'queryRaw') return queryRaw;
            if (key === 'executeRaw') return executeRaw;
            if (key === 'dispose') return () => Promise.all([target.dispose(), ...connected.map((c) => c.dispose())]).then(() => {});
            const found = Reflect.get(target, key, r);
            return typeof found === 'function' ? found.bind(target) : found;
          },
        });
      };
    },
  });
}
