import type { Session } from '../generated/prisma/client.js';
import { markImmutable } from '../domain/immutable.js';

/**
 * Session rows by id, for a database this process alone writes (PGlite: one process owns its
 * folder). On PostgreSQL, where other instances write too, nothing is kept (`writes()` is null).
 *
 * Rule: a row read while the database's write count (`Sql.writes()`, moved when any write begins
 * and again when it ends) stood at N is current for as long as the count stays at N, so the whole
 * cache is dropped as soon as it moves, and a read during which it moved is not kept. Rows are
 * deep-frozen: every request shares them.
 *
 * Bounded by rows (SESSION_CACHE_MAX_ROWS; a row is about 1 KB): when full, it starts over.
 */
export class SessionRowsCache {
  private readonly rows = new Map<string, Session>();
  private at: number | null = null;

  constructor(
    private readonly writes: () => number | null,
    private readonly max = 10_000,
  ) {}

  /** The write count to pass to `keep` once a read begun now has returned; null when nothing can be kept. */
  mark(): number | null {
    return this.writes();
  }

  /** The kept row of `id` in `workspaceId`, if current. */
  get(id: string, workspaceId: string): Session | undefined {
    const now = this.writes();
    if (now === null) return undefined;
    if (now !== this.at) {
      this.rows.clear();
      this.at = now;
      return undefined;
    }
    const row = this.rows.get(id);
    return row && row.workspaceId === workspaceId ? row : undefined;
  }

  /** Keeps `rows`, read from a statement begun at `mark`, when no write began or ended since. */
  keep(mark: number | null, rows: readonly Session[]): void {
    if (mark === null || this.writes() !== mark || this.max <= 0) return;
    if (this.at !== mark) {
      this.rows.clear();
      this.at = mark;
    }
    for (const row of rows) {
      if (this.rows.size >= this.max) this.rows.clear();
      this.rows.set(row.id, markImmutable(row));
    }
  }

  /** Drops every row. */
  clear(): void {
    this.rows.clear();
  }

  get size(): number {
    return this.rows.size;
  }
}
