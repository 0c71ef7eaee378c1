/**
 * Mode `raw-writes`, the write baseline with no server: the locked insert (BEGIN; SELECT … FOR UPDATE
 * on the session; INSERT the message at the next position; UPDATE the session's counters; COMMIT)
 * from `clients` concurrent loops for a duration, through `pg` (a pool of 10, as the server's) or
 * PGlite. Each attempt is timed, failed ones too.
 */
import type { RawWritesArgs } from '../args.js';
import { FILLER } from '../operations.js';
import { quantile } from '../stats.js';

const LOCK = 'SELECT "messageCount" FROM "Session" WHERE id = $1 FOR UPDATE';
const INSERT = `INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds",
      generating, "tokensO200k", "tokensCl100k", "createdAt", "updatedAt")
    VALUES (gen_random_uuid()::text, $1, $2, 'ASSISTANT', $3::jsonb, $4, '{}', '{}', false, 20, 20, now(), now())`;
const BUMP = `UPDATE "Session" SET "messageCount" = "messageCount" + 1, "eventSequence" = "eventSequence" + 1, "updatedAt" = now() WHERE id = $1`;

type Query = (sql: string, params: unknown[]) => Promise<{ rows: { messageCount: number }[] }>;

/** A database the loops write to: `transaction` commits what `work` did, or rolls back and rethrows. */
interface RawDatabase {
  transaction(work: (query: Query) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

async function openDatabase(database: RawWritesArgs['database']): Promise<RawDatabase> {
  if (database.backend === 'postgres') {
    const { default: pg } = await import('pg');
    const pgPool = new pg.Pool({ connectionString: database.url, max: 10 });
    return {
      async transaction(work) {
        const client = await pgPool.connect();
        try {
          await client.query('BEGIN');
          await work((sql, params) => client.query(sql, params));
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => pgPool.end(),
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(database.dataDir);
  await db.waitReady;
  return {
    transaction: (work) => db.transaction((tx) => work((sql, params) => tx.query(sql, params) as ReturnType<Query>)),
    close: () => db.close(),
  };
}

export async function runRawWrites({ database, sessions, clients, durationS }: RawWritesArgs) {
  const text = `raw ${FILLER}`;
  const parts = JSON.stringify([{ type: 'text', text }]);
  const db = await openDatabase(database);
  const latencies: number[] = [];
  let errors = 0;
  const firstErrors: string[] = [];
  const started = performance.now();
  const deadline = started + durationS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const sessionId = sessions[i % sessions.length];
      while (performance.now() < deadline) {
        const t = performance.now();
        try {
          await db.transaction(async (query) => {
            const { rows } = await query(LOCK, [sessionId]);
            await query(INSERT, [sessionId, rows[0].messageCount, parts, text]);
            await query(BUMP, [sessionId]);
          });
        } catch (error) {
          errors++;
          if (firstErrors.length < 3) firstErrors.push((error as Error).message);
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await db.close();
  return {
    rps: latencies.length / elapsed,
    total: latencies.length,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    failed: errors,
    firstErrors,
  };
}
