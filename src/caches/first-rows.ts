import { LRUCache } from 'lru-cache';
import type { LightRow } from '../db/stores/messages.js';

/**
 * The light row at position 0 of a session, by the id of the session that owns that position (the
 * root of a fork's lineage), finished rows only: what context assembly reads to keep a leading
 * SYSTEM message whatever the window.
 *
 * Rule: an entry is never stale because a finished message never changes (MESSAGE_IMMUTABLE) and
 * the message at position 0 of a session never moves; only finished rows are kept. A deleted
 * session's id is never asked for again (ids are not reused), so its entry only waits to be
 * evicted; `AssemblyCaches.forget(sessionId)`, which every delete calls, drops it at once. Bounded by
 * sessions, from configuration (`config.caches.firstRowsMax`, a share of CACHE_MEMORY_MB), least
 * recently used first.
 */
export class FirstRowsCache {
  private readonly rows: LRUCache<string, LightRow>;

  constructor(max: number) {
    this.rows = new LRUCache({ max });
  }

  get(sessionId: string): LightRow | undefined {
    return this.rows.get(sessionId);
  }

  /** Keeps `row`, the row at position 0 of `sessionId`, when it is finished. */
  keep(sessionId: string, row: LightRow): void {
    if (!row.generating) this.rows.set(sessionId, row);
  }

  forget(sessionId: string): void {
    this.rows.delete(sessionId);
  }
}
