import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PGLITE_SHARED_BUFFERS_MB } from '../../src/config.js';
import { openPglite } from '../../src/db/pglite-open.js';
import { migratedPglite } from '../helpers/app.js';

describe('opening the embedded database', () => {
  it("sets its page cache (shared_buffers) from the setting at every start, not from the folder's postgresql.conf", async () => {
    // Copies of the run's database (test/global-setup.ts), whose postgresql.conf is initdb's.
    for (const [size, shown] of [
      [undefined, `${DEFAULT_PGLITE_SHARED_BUFFERS_MB}MB`],
      [8, '8MB'],
    ] as const) {
      const { pglite } = await openPglite('memory://shared-buffers', size, migratedPglite());
      try {
        const { rows } = await pglite.query<{ shared_buffers: string }>('SHOW shared_buffers');
        expect(rows[0].shared_buffers).toBe(shown);
      } finally {
        await pglite.close();
      }
    }
    await expect(openPglite('memory://too-small', 2)).rejects.toThrow(RangeError);
  }, 60_000);

  it('starts a new database as a copy of a dump (`from`): its writes stay its own, and a folder holding a database is refused', async () => {
    const migrations = 'SELECT count(*)::int AS n FROM "_prisma_migrations"';
    const dir = mkdtempSync(join(tmpdir(), 'sg-pglite-from-'));
    try {
      const folder = join(dir, 'data');
      const first = (await openPglite(folder, undefined, migratedPglite())).pglite;
      const second = (await openPglite('memory://', undefined, migratedPglite())).pglite;
      const applied = (await first.query<{ n: number }>(migrations)).rows[0].n;
      expect(applied).toBeGreaterThan(0);
      await first.exec('DELETE FROM "_prisma_migrations"');
      expect((await second.query<{ n: number }>(migrations)).rows[0].n).toBe(applied);
      await Promise.all([first.close(), second.close()]);
      // The folder opens again as it was left, without a dump; with one, never replaced.
      await expect(openPglite(folder, undefined, migratedPglite())).rejects.toThrow(/already holds a database/);
      const again = (await openPglite(folder)).pglite;
      expect((await again.query<{ n: number }>(migrations)).rows[0].n).toBe(0);
      await again.close();
      const third = (await openPglite('memory://', undefined, migratedPglite())).pglite;
      expect((await third.query<{ n: number }>(migrations)).rows[0].n).toBe(applied);
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
