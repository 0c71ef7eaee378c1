import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = new URL('../..', import.meta.url).pathname;
// In the system's temporary folder, one per checkout: never inside dist/, which the build replaces.
const lock = join(tmpdir(), `sg-test-build-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    return true; // Just taken: its holder has not written its pid yet.
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `started` (which launches a process through scripts/start.mjs and resolves once that process
 * is past the build: listening, or exited) while no other test process does. On a fresh clone,
 * dist/ is stale and each such start compiles it: two at once in the two workers would compile
 * twice, one rewriting the files the other's server is loading. Once dist/ is built, the others
 * find it current and only wait their turn to start.
 */
export async function oneBuildAtATime<T>(started: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A holder killed mid-build (an interrupted run) leaves the lock behind.
      if (!holderAlive()) rmSync(lock, { recursive: true, force: true });
      else await sleep(200);
    }
  }
  try {
    writeFileSync(join(lock, 'pid'), String(process.pid));
    return await started();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
