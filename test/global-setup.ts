// Once per `vitest run`, before any test file: the migrated PGlite database every test app starts
// from (`createDatabase`'s `from`), instead of each app running initdb and the migrations, and the
// same database before its migrations for the tests of an empty one. Made once per key (below).
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { pgliteConnection } from '../src/db/database.js';
import { applyMigrations, MIGRATIONS_DIR } from '../src/db/migrate.js';
import { openPglite } from '../src/db/pglite-open.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The tarball of a migrated PGlite data folder (test/helpers/app.ts `testPglite` starts every database from it). */
    migratedPglite: string;
    /** The same folder before the migrations: as initdb left it (for the tests of what happens on an empty database). */
    initializedPglite: string;
  }
}

const root = new URL('..', import.meta.url).pathname;
const CACHE = join(root, 'test/output/pglite');

/** Every file under `dir`, sorted, as paths relative to `base`. */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name), base) : [relative(base, join(dir, entry.name))]))
    .sort();
}

/**
 * What the dumps depend on: the migrations (every file, name and content), the code applying them,
 * this file, and PGlite's version (its Postgres and catalog). A change to any of them makes another
 * key, so a stale dump is never used.
 */
function dumpKey(): string {
  const hash = createHash('sha256');
  const pgliteDir = dirname(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')));
  hash.update(`pglite ${JSON.parse(readFileSync(join(pgliteDir, 'package.json'), 'utf8')).version}\0`);
  hash.update(readFileSync(join(root, 'src/db/migrate.ts')));
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  for (const file of filesUnder(MIGRATIONS_DIR)) {
    hash.update(`\0${file}\0`);
    hash.update(readFileSync(join(MIGRATIONS_DIR, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

async function dump(pglite: PGlite, path: string) {
  // Flushed to the data files: no copy replays the WAL at its start.
  await pglite.exec('CHECKPOINT');
  const tarball = await pglite.dumpDataDir('none');
  // Written aside and renamed: a run interrupted mid-write never leaves a partial dump under the key.
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, new Uint8Array(await tarball.arrayBuffer()));
  renameSync(partial, path);
}

export default async function setup(project: TestProject) {
  const key = dumpKey();
  const initialized = join(CACHE, `initialized-${key}.tar`);
  const migrated = join(CACHE, `migrated-${key}.tar`);
  if (!existsSync(initialized) || !existsSync(migrated)) {
    mkdirSync(CACHE, { recursive: true });
    // Dumps of other migration sets (or PGlite versions) are never used again; a run making this
    // key's at the same time keeps its own.
    for (const old of readdirSync(CACHE)) if (!old.includes(key)) rmSync(join(CACHE, old), { force: true });
    const { pglite } = await openPglite('memory://');
    try {
      // The copies hold the one database the app uses: template0 and template1 are 600 of the
      // folder's 1,074 files, and untarring them was a third of each copy's opening (nothing
      // creates a database on PGlite).
      await pglite.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
      await pglite.exec('DROP DATABASE template0');
      await pglite.exec('DROP DATABASE template1');
      await dump(pglite, initialized);
      await applyMigrations(pgliteConnection(pglite));
      await dump(pglite, migrated);
    } finally {
      await pglite.close();
    }
  }
  project.provide('initializedPglite', initialized);
  project.provide('migratedPglite', migrated);
}
