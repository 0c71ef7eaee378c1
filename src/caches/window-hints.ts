import { LRUCache } from 'lru-cache';
import type { LineageSession } from '../domain/lineage.js';

/**
 * What one assembly of a session tells the next: its lineage (frozen when the session was made)
 * and the cost per message of its assembly window, to size the first page of rows it reads.
 */
export interface WindowHint extends Pick<LineageSession, 'id' | 'forkIndex' | 'lineage'> {
  costPerRow: number | null;
}

/**
 * Window hints per session, so a session assembled before is read in one statement.
 *
 * Rule: a hint is never stale because a session's lineage and forkIndex never change once it is
 * made; the cost per message only sizes a page of rows (a wrong one costs a statement, never a
 * wrong result). Whatever changes a lineage, or deletes a session, calls `forget(sessionId)`;
 * `deleteSession` does (through `AssemblyCaches.forget`) for each deleted session. Bounded by
 * sessions, from configuration (`config.caches.windowHintsMax`; 0 keeps nothing), least recently used forgotten
 * first.
 */
export class WindowHints {
  private readonly hints: LRUCache<string, WindowHint> | null;

  constructor(maxSessions = 10_000) {
    this.hints = maxSessions > 0 ? new LRUCache({ max: maxSessions }) : null;
  }

  get(sessionId: string): WindowHint | undefined {
    return this.hints?.get(sessionId);
  }

  set(hint: WindowHint): void {
    this.hints?.set(hint.id, hint);
  }

  forget(sessionId: string): void {
    this.hints?.delete(sessionId);
  }

  get size(): number {
    return this.hints?.size ?? 0;
  }
}
