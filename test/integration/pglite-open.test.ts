import { describe, expect, it } from 'vitest';
import { DEFAULT_PGLITE_SHARED_BUFFERS_MB } from '../../src/config.js';
import { openPglite } from '../../src/db/pglite-open.js';

describe('opening the embedded database', () => {
  it("sets its page cache (shared_buffers) from the setting at every start, not from the folder's postgresql.conf", async () => {
    for (const [size, shown] of [
      [undefined, `${DEFAULT_PGLITE_SHARED_BUFFERS_MB}MB`],
      [8, '8MB'],
    ] as const) {
      const { pglite } = await openPglite('memory://shared-buffers', size);
      try {
        const { rows } = await pglite.query<{ shared_buffers: string }>('SHOW shared_buffers');
        expect(rows[0].shared_buffers).toBe(shown);
      } finally {
        await pglite.close();
      }
    }
    await expect(openPglite('memory://too-small', 2)).rejects.toThrow(RangeError);
  }, 60_000);
});
