// Opening the embedded database (PGlite) on a folder, and initializing a new folder apart.
import { existsSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { PGlite } from '@electric-sql/pglite';
import { DEFAULT_PGLITE_SHARED_BUFFERS_MB } from '../config.js';

/**
 * A PGlite data folder as one tarball, as PGlite's `dumpDataDir()` makes it (compressed or not),
 * that `openPglite` / `createDatabase` (`from`) start a new database from. The contract:
 * - only a database that does not exist yet starts from a dump: `memory://…`, or a folder without
 *   a database in it (a folder that holds one is refused, its data is never replaced);
 * - the dump is made by the same PGlite version (the same Postgres and catalog); a CHECKPOINT
 *   before dumping spares each copy replaying the WAL at its start;
 * - the new database is a copy: what the dumped instance had committed, its migrations included
 *   (`migrate()` then finds them applied, one read), and nothing written to it reaches the dump;
 * - the Blob is only read, so one dump serves any number of databases, at once or in turn.
 * The tests start every app's database from one migrated dump made per migration set (no initdb
 * and no migrations per app: test/global-setup.ts).
 */
export type PgliteDump = Blob;

export interface OpenedPglite {
  pglite: PGlite;
  /** One line for the start-up log: where the data lives. */
  description: string;
}

/**
 * Opens PGlite on `dataDir` (a folder, created if missing, or `memory://…`) and waits until it is
 * ready. A folder PGlite has not initialized yet is initialized first in a worker thread (see
 * `initializeFolder`). `sharedBuffersMb` is its Postgres's page cache (`shared_buffers`), set at
 * every start whatever the folder's postgresql.conf says (config.ts DEFAULT_PGLITE_SHARED_BUFFERS_MB).
 *
 * `from` (see `PgliteDump`): the new database starts as a copy of that dump instead of being
 * initialized (no initdb).
 */
export async function openPglite(
  dataDir: string,
  sharedBuffersMb = DEFAULT_PGLITE_SHARED_BUFFERS_MB,
  from?: PgliteDump,
): Promise<OpenedPglite> {
  if (!Number.isInteger(sharedBuffersMb) || sharedBuffersMb < 4) throw new RangeError(`shared_buffers of ${sharedBuffersMb} MB`);
  const inMemory = dataDir.startsWith('memory://');
  // PGlite's modules load on this thread while its Postgres compiles on V8's background threads.
  const [pgliteWasmModule, { PGlite }] = await Promise.all([compilePostgres(), import('@electric-sql/pglite')]);
  if (!inMemory) {
    mkdirSync(dataDir, { recursive: true });
    const initialized = existsSync(join(dataDir, 'PG_VERSION'));
    if (initialized && from) throw new Error(`PGlite cannot start ${dataDir} from a dump: it already holds a database`);
    if (!initialized && !from) await initializeFolder(dataDir, pgliteWasmModule);
  }
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`];
  const pglite = new PGlite(dataDir, {
    startParams,
    ...(pgliteWasmModule ? { pgliteWasmModule } : {}),
    ...(from ? { loadDataDir: from } : {}),
  });
  await pglite.waitReady;
  return { pglite, description: inMemory ? 'PGlite (in memory)' : `PGlite in ${dataDir}` };
}

/** PGlite's CommonJS entry point, beside its Postgres in WebAssembly (`pglite.wasm`). */
function pgliteEntry(): string {
  return createRequire(import.meta.url).resolve('@electric-sql/pglite');
}

let postgres: Promise<WebAssembly.Module | undefined> | null = null;

/**
 * PGlite's Postgres, compiled once per process (as PGlite itself caches it): for every instance
 * opened here, and for the worker that initializes a new folder. Undefined if a PGlite build no
 * longer has it there: PGlite then compiles its own, as it would without this.
 */
function compilePostgres(): Promise<WebAssembly.Module | undefined> {
  postgres ??= readFile(join(dirname(pgliteEntry()), 'pglite.wasm')).then(
    // A file read is never a SharedArrayBuffer.
    (bytes) => WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>),
    () => undefined,
  );
  // A failed compilation is tried again by the next open.
  postgres.catch(() => {
    postgres = null;
  });
  return postgres;
}

/**
 * PGlite initializes a new folder with a second instance of itself and initdb's own WebAssembly,
 * and keeps the memory they used for the process's life. A worker thread that opens and closes the
 * folder takes all of it with it when it exits; this thread then opens a folder like any other. The worker gets the Postgres this thread
 * compiled (a WebAssembly.Module is shared between threads, not compiled again).
 */
function initializeFolder(dataDir: string, pgliteWasmModule: WebAssembly.Module | undefined): Promise<void> {
  // The CommonJS build (what `require` resolves): an `eval` worker is a CommonJS script.
  const entry = pgliteEntry();
  const source = `
    const { workerData } = require('node:worker_threads');
    const { PGlite } = require(workerData.entry);
    (async () => {
      const { pgliteWasmModule } = workerData;
      const pglite = new PGlite(workerData.dataDir, pgliteWasmModule ? { pgliteWasmModule } : {});
      await pglite.waitReady;
      await pglite.close();
    })().catch((error) => { process.exitCode = 1; throw error; });`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { entry, dataDir, pgliteWasmModule } });
    let failure: Error | undefined;
    worker.once('error', (error) => (failure = error));
    worker.once('exit', (code) => {
      if (code === 0 && !failure) resolve();
      else reject(failure ?? new Error(`PGlite could not initialize ${dataDir} (worker exit code ${code})`));
    });
  });
}
