/**
 * Which workspace an API key hash selects (null: none), for a short time.
 *
 * Rule: an entry may be stale for at most `ttlMs` (API_KEY_CACHE_TTL_MS): a key revoked or added in
 * the database is seen within that time on every instance. Whatever revokes or re-points a key on
 * this instance calls `forget(keyHash)` (or `purge()`), so this instance sees it at once. Bounded by
 * entries (API_KEY_CACHE_MAX): when full, everything is dropped.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { workspaceId: string | null; until: number }>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached answer for `keyHash` (undefined: not cached or expired). */
  get(keyHash: string, now = Date.now()): string | null | undefined {
    const hit = this.entries.get(keyHash);
    if (!hit || hit.until < now) return undefined;
    return hit.workspaceId;
  }

  set(keyHash: string, workspaceId: string | null, now = Date.now()): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(keyHash, { workspaceId, until: now + this.ttlMs });
  }

  forget(keyHash: string): void {
    this.entries.delete(keyHash);
  }

  purge(): void {
    this.entries.clear();
  }
}
