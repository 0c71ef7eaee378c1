import { cpSync, mkdtempSync, readdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { afterEach, describe, expect, it } from 'vitest';
import { pgliteConnection } from '../../src/db/database.js';
import { applyMigrations, MIGRATIONS_DIR, readMigrations } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite-open.js';
import { initializedPglite, migratedPglite } from '../helpers/app.js';

const open: PGlite[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

/** An empty database, as initdb leaves it (a copy of the run's: initdb once per run). */
async function freshDb() {
  const { pglite } = await openPglite('memory://', undefined, initializedPglite());
  open.push(pglite);
  return pglite;
}

/** A database the shipped migrations were applied to (a copy of the run's migrated one: no initdb). */
async function migratedDb() {
  const { pglite } = await openPglite('memory://', undefined, migratedPglite());
  open.push(pglite);
  return pglite;
}

function copyOfMigrations() {
  const dir = mkdtempSync(join(tmpdir(), 'sg-migrations-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

// The first test builds a whole database from the migrations on an empty one: seconds, more on a
// loaded machine. The others start from a copy of the migrated one and apply the same migrations
// again from a copy of the folder (found applied: same names, same checksums) before changing it.
describe('migrations applied by the server', { timeout: 120_000 }, () => {
  it("applies every folder once and records it in Prisma's _prisma_migrations table", async () => {
    const db = await freshDb();
    const first = await applyMigrations(pgliteConnection(db));
    expect(first.applied).toEqual(readMigrations().map((m) => m.name));
    const statements: string[] = [];
    const recording = pgliteConnection(db);
    const second = await applyMigrations({
      query: (sql, params) => {
        statements.push(sql);
        return recording.query(sql, params);
      },
      exec: (sql) => {
        statements.push(sql);
        return recording.exec(sql);
      },
    });
    // A migrated database is recognized with reads only: no lock, no DDL.
    expect(statements.every((sql) => /^SELECT /.test(sql) && !/advisory/.test(sql))).toBe(true);
    expect(second).toEqual({ applied: [], alreadyApplied: first.applied.length });
    const rows = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null; applied_steps_count: number }>(
      'SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations"',
    );
    expect(rows.rows).toHaveLength(first.applied.length);
    expect(rows.rows[0].checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.rows[0].finished_at).not.toBeNull();
    const tables = await db.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    expect(tables.rows.map((t) => t.tablename)).toEqual(expect.arrayContaining(['Session', 'Message', 'Turn', 'SessionEvent']));
  });

  it('applies a new folder added later, and only that one', async () => {
    const db = await migratedDb();
    const dir = copyOfMigrations();
    await applyMigrations(pgliteConnection(db), dir);
    const name = '29990101000000_later';
    cpSync(join(dir, readdirSync(dir).find((d) => /^\d/.test(d))!), join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'migration.sql'), 'CREATE TABLE "Later" (id INT PRIMARY KEY);');
    const report = await applyMigrations(pgliteConnection(db), dir);
    expect(report.applied).toEqual([name]);
  });

  it('refuses to start when an applied migration was edited', async () => {
    const db = await migratedDb();
    const dir = copyOfMigrations();
    await applyMigrations(pgliteConnection(db), dir);
    const [first] = readMigrations(dir);
    appendFileSync(join(dir, first.name, 'migration.sql'), '\n-- edited\n');
    await expect(applyMigrations(pgliteConnection(db), dir)).rejects.toThrow(/edited after it was applied/);
  });

  it('rolls back a failing migration completely and reports it', async () => {
    const db = await migratedDb();
    const dir = copyOfMigrations();
    await applyMigrations(pgliteConnection(db), dir);
    const name = '29990101000000_broken';
    cpSync(join(dir, readMigrations(dir)[0].name), join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'migration.sql'), 'CREATE TABLE "Half" (id INT); SELECT * FROM "does_not_exist";');
    await expect(applyMigrations(pgliteConnection(db), dir)).rejects.toThrow(/29990101000000_broken failed/);
    const half = await db.query("SELECT 1 FROM pg_tables WHERE tablename = 'Half'");
    expect(half.rows).toHaveLength(0);
    const recorded = await db.query('SELECT 1 FROM "_prisma_migrations" WHERE migration_name = $1', [name]);
    expect(recorded.rows).toHaveLength(0);
  });

  it('refuses to start when a recorded migration never finished, or is unknown', async () => {
    const db = await migratedDb();
    const dir = copyOfMigrations();
    await applyMigrations(pgliteConnection(db), dir);
    const [first] = readMigrations(dir);
    await db.query('UPDATE "_prisma_migrations" SET finished_at = NULL WHERE migration_name = $1', [first.name]);
    await expect(applyMigrations(pgliteConnection(db), dir)).rejects.toThrow(/never finished/);
    await db.query('UPDATE "_prisma_migrations" SET finished_at = now() WHERE migration_name = $1', [first.name]);
    await db.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at) VALUES ('x', $1, '29990101000000_newer', now())`,
      [first.checksum],
    );
    await expect(applyMigrations(pgliteConnection(db), dir)).rejects.toThrow(/does not know/);
  });
});
