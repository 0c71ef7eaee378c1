import { LRUCache } from 'lru-cache';
import { markImmutable } from '../domain/immutable.js';
import type { Session } from '../generated/prisma/client.js';

/**
 * Session rows by id, for a database this process alone writes (PGlite: one process owns its
 * folder). On PostgreSQL, where other instances write too, nothing is kept (`writes()` is null).
 *
 * Rule: a row read while the database's write count (`Sql.writes()`, moved when any write begins
 * and again when it ends) stood at N is current for as long as the count stays at N, so the whole
 * cache is dropped as soon as it moves, and a read during which it moved is not kept. No caller
 * has to call `forget`: every write moves the count. Rows are deep-frozen: every request shares
 * them. Bounded by rows, from configuration (`config.caches.sessionRowsMax`, a share of CACHE_MEMORY_MB; 0 keeps nothing), least
 * recently used forgotten first.
 */
export class SessionRowsCache {
  private readonly rows: LRUCache<string, Session> | null;
  /** The write count the kept rows were read at. */
  private at: number | null = null;

  constructor(
    private readonly writes: () => number | null,
    max = 10_000,
  ) {
    this.rows = max > 0 ? new LRUCache({ max }) : null;
  }

  /**
   * The sessions `ids` of `workspaceId`, in order (null: none such): kept rows first, the others
   * from `load(missing)`, kept when no write began or ended while `load` ran.
   */
  async read(workspaceId: string, ids: readonly string[], load: (missing: string[]) => Promise<Session[]>): Promise<(Session | null)[]> {
    const kept = ids.map((id) => this.get(id, workspaceId));
    const missing = ids.filter((_, i) => !kept[i]);
    if (!missing.length) return kept as Session[];
    const mark = this.mark();
    const rows = await load(missing);
    this.keep(mark, rows);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id, i) => kept[i] ?? byId.get(id) ?? null);
  }

  /** Drops the row of `sessionId`. */
  forget(sessionId: string): void {
    this.rows?.delete(sessionId);
  }

  /** Drops every row. */
  clear(): void {
    this.rows?.clear();
  }

  get size(): number {
    return this.rows?.size ?? 0;
  }

  /** The kept row of `id` in `workspaceId`, if current. */
  private get(id: string, workspaceId: string): Session | undefined {
    const now = this.writes();
    if (now === null || !this.rows) return undefined;
    if (now !== this.at) {
      this.rows.clear();
      this.at = now;
      return undefined;
    }
    const row = this.rows.get(id);
    return row && row.workspaceId === workspaceId ? row : undefined;
  }

  /** The write count to pass to `keep` once a read begun now has returned; null when nothing can be kept. */
  private mark(): number | null {
    return this.writes();
  }

  /** Keeps `rows`, read from a statement begun at write count `mark`, when no write began or ended since. */
  private keep(mark: number | null, rows: readonly Session[]): void {
    if (mark === null || !this.rows || this.writes() !== mark) return;
    if (this.at !== mark) {
      this.rows.clear();
      this.at = mark;
    }
    for (const row of rows) this.rows.set(row.id, markImmutable(row));
  }
}
