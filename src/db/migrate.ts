import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The raw connection migrations run on: one session, so the advisory lock holds across calls. */
export interface MigrationConnection {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a whole multi-statement SQL file. */
  exec(sql: string): Promise<void>;
}

export interface MigrationReport {
  applied: string[];
  alreadyApplied: number;
}

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

// Any fixed 64-bit number; every session-graph instance on one database takes the same lock.
const MIGRATION_LOCK_KEY = 72_707_431_337;

export class MigrationError extends Error {}

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): MigrationFile[] {
  if (!existsSync(dir)) throw new MigrationError(`No migrations folder at ${dir}.`);
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Applies pending Prisma migration folders through the driver the server already has, keeping
 * Prisma's own `_prisma_migrations` bookkeeping so `prisma migrate deploy` agrees with us on a
 * machine that has the schema engine. Serialized by a PostgreSQL advisory lock so servers
 * starting together do not both migrate. Refuses to run when an applied migration's file changed
 * or an earlier run failed half-way.
 */
export async function applyMigrations(conn: MigrationConnection, dir = MIGRATIONS_DIR): Promise<MigrationReport> {
  const files = readMigrations(dir);
  // Start-up on a migrated database: one read, no lock, no DDL. Anything else (no table yet, a
  // pending, unknown, edited or unfinished migration) takes the locked path below, which decides.
  if (await upToDate(conn, files)) return { applied: [], alreadyApplied: files.length };
  await conn.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await conn.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const rows = await conn.query<{ migration_name: string; checksum: string; finished_at: unknown }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const applied = new Map(rows.map((r) => [r.migration_name, r]));
    for (const row of rows) {
      if (row.finished_at === null) {
        throw new MigrationError(
          `Migration ${row.migration_name} started but never finished; repair the database and mark it rolled back before starting again.`,
        );
      }
      const file = files.find((f) => f.name === row.migration_name);
      if (!file) {
        throw new MigrationError(`The database has migration ${row.migration_name}, which this version does not know.`);
      }
      if (file.checksum !== row.checksum) {
        throw new MigrationError(
          `Migration ${row.migration_name} was edited after it was applied (checksum mismatch); add a new migration instead.`,
        );
      }
    }
    const report: MigrationReport = { applied: [], alreadyApplied: applied.size };
    for (const file of files) {
      if (applied.has(file.name)) continue;
      const id = randomUUID();
      await conn.exec('BEGIN');
      try {
        await conn.query('INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())', [
          id,
          file.checksum,
          file.name,
        ]);
        await conn.exec(file.sql);
        await conn.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
        await conn.exec('COMMIT');
      } catch (error) {
        await conn.exec('ROLLBACK');
        throw new MigrationError(`Migration ${file.name} failed: ${(error as Error).message}`);
      }
      report.applied.push(file.name);
    }
    return report;
  } finally {
    await conn.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}

/** Whether the database records exactly the shipped migrations, all finished, with the same checksums. */
async function upToDate(conn: MigrationConnection, files: MigrationFile[]): Promise<boolean> {
  const [table] = await conn.query<{ exists: boolean }>(`SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS exists`);
  if (!table?.exists) return false;
  const rows = await conn.query<{ migration_name: string; checksum: string; finished: boolean }>(
    'SELECT migration_name, checksum, finished_at IS NOT NULL AS finished FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
  );
  if (rows.length !== files.length) return false;
  const shipped = new Map(files.map((f) => [f.name, f.checksum]));
  return rows.every((row) => row.finished && shipped.get(row.migration_name) === row.checksum);
}
