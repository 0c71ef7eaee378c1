import { LRUCache } from 'lru-cache';
import { partsChars } from '../domain/parts.js';
import type { StoredPart } from '../domain/types.js';

/**
 * Parsed parts of finished messages, by message id, least recently used forgotten first.
 *
 * Rule: an entry is never stale because a finished message never changes (MESSAGE_IMMUTABLE), and
 * a deleted one is never asked for again: every lookup is by the id of a row of a session that
 * exists (a session is only deleted with its forks). Whatever breaks this (deleting or editing a
 * message) must call `forget(sessionId)` on every instance; `deleteSession` calls it (through
 * `AssemblyCaches.forget`) for each deleted session.
 *
 * Bounded by characters, from configuration (`config.caches.partsMaxChars`, a share of CACHE_MEMORY_MB; 0 keeps nothing); an entry
 * larger than the whole bound is not kept. The parts are frozen (markImmutable), and the payload
 * pieces and canonical JSON derived from them in the domain live as long as they do (weakly
 * keyed), so this bound bounds those too (pieces share the parts' strings; the canonical JSON,
 * kept as UTF-8, about doubles what the parts take).
 */
export class FinishedPartsCache {
  private readonly entries: LRUCache<string, { sessionId: string; parts: StoredPart[] }> | null;

  constructor(maxChars = 32_000_000) {
    this.entries = maxChars > 0 ? new LRUCache({ maxSize: maxChars, sizeCalculation: (entry) => partsWeight(entry.parts) }) : null;
  }

  get(id: string): StoredPart[] | undefined {
    return this.entries?.get(id)?.parts;
  }

  /** Keeps the parts of message `id` of session `sessionId` (the first parts kept for an id stay). */
  set(id: string, parts: StoredPart[], sessionId = ''): void {
    if (!this.entries || this.entries.has(id)) return;
    this.entries.set(id, { sessionId, parts });
  }

  /** Characters kept (approximately: what the bound applies to). */
  get chars(): number {
    return this.entries?.calculatedSize ?? 0;
  }

  /** Drops the parts of every message of `sessionId` (a scan: deletes are rare). */
  forget(sessionId: string): void {
    if (!this.entries) return;
    const ids: string[] = [];
    for (const [id, entry] of this.entries.entries()) if (entry.sessionId === sessionId) ids.push(id);
    for (const id of ids) this.entries.delete(id);
  }
}

/** What a message's parts weigh: their strings, plus a fixed 64 per part for the objects. */
function partsWeight(parts: readonly StoredPart[]): number {
  // lru-cache weighs an entry by a positive integer.
  return Math.max(1, 64 * parts.length + partsChars(parts));
}
