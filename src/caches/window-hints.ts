import type { LineageSession } from '../domain/lineage.js';

/**
 * What one assembly of a session tells the next: its lineage (frozen when the session was made)
 * and the cost per message of its window, to size the first page.
 */
export interface WindowHint extends Pick<LineageSession, 'id' | 'forkIndex' | 'lineage'> {
  costPerRow: number | null;
}

/**
 * Window hints per session, so a session assembled before is read in one statement.
 *
 * Rule: a hint is never stale because a session's lineage and forkIndex never change once it is
 * made; the cost per message only sizes a page (a wrong one costs a statement, never a wrong
 * result). Whatever changes a lineage, or deletes a session, calls `forget(sessionId)`;
 * `deleteSession` does for each deleted session. Bounded by sessions (WINDOW_HINTS_MAX), oldest
 * use forgotten first.
 */
export class WindowHints {
  private readonly hints = new Map<string, WindowHint>();

  constructor(private readonly maxSessions = 10_000) {}

  get(sessionId: string): WindowHint | undefined {
    return this.hints.get(sessionId);
  }

  set(hint: WindowHint): void {
    this.hints.delete(hint.id);
    this.hints.set(hint.id, hint);
    if (this.hints.size > this.maxSessions) this.hints.delete(this.hints.keys().next().value!);
  }

  forget(sessionId: string): void {
    this.hints.delete(sessionId);
  }

  get size(): number {
    return this.hints.size;
  }
}
