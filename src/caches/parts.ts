import type { StoredPart } from '../domain/types.js';

/**
 * Parsed parts of finished messages, by message id, evicted by the CLOCK rule (second chance: the
 * oldest entry goes unless it was read since it was last passed over), which approximates least
 * recently used while a read only sets a flag.
 *
 * Rule: an entry is never stale because a finished message never changes (MESSAGE_IMMUTABLE), and
 * a deleted one is never asked for again: every lookup is by the id of a row of a session that
 * exists (a session is only deleted with its forks). Whatever breaks this (deleting or editing a
 * message) must call `forget(sessionId)` on every instance; `deleteSession` calls it for each
 * deleted session.
 *
 * The parts are frozen (markImmutable), and the payload pieces and canonical JSON derived from them
 * in the domain live as long as they do (weakly keyed), so the bound on characters
 * (PARTS_CACHE_MAX_CHARS) bounds those too (pieces share the parts' strings; the canonical JSON,
 * kept as UTF-8, about doubles what the parts take).
 */
export class FinishedPartsCache {
  private readonly entries = new Map<string, { sessionId: string; parts: StoredPart[]; size: number; read: boolean }>();
  private size = 0;

  constructor(private readonly maxChars = 32_000_000) {}

  get(id: string): StoredPart[] | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    entry.read = true;
    return entry.parts;
  }

  /** Keeps the parts of message `id` of session `sessionId`. */
  set(id: string, parts: StoredPart[], sessionId = '') {
    if (this.entries.has(id)) return;
    const size = parts.reduce(
      (sum, p) =>
        sum +
        64 +
        (p.type === 'text'
          ? p.text.length
          : p.type === 'toolResult'
            ? p.content.length
            : // The arguments' text and their value (about as long).
              p.type === 'toolCall'
              ? 2 * (p.argumentsJson?.length ?? 0)
              : 0),
      0,
    );
    if (size > this.maxChars) return;
    this.entries.set(id, { sessionId, parts, size, read: false });
    this.size += size;
    while (this.size > this.maxChars) {
      const [oldest, entry] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      // The entry just added stays (it is about to be used); one read since it was last passed over
      // is passed over once more.
      if (oldest === id || entry.read) {
        entry.read = false;
        this.entries.set(oldest, entry);
      } else {
        this.size -= entry.size;
      }
    }
  }

  /** Characters kept (approximately: what the bound applies to). */
  get chars(): number {
    return this.size;
  }

  /** Drops the parts of every message of `sessionId` (a scan: deletes are rare). */
  forget(sessionId: string): void {
    for (const [id, entry] of this.entries) {
      if (entry.sessionId !== sessionId) continue;
      this.entries.delete(id);
      this.size -= entry.size;
    }
  }
}
