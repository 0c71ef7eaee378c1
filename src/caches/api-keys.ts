/**
 * Which workspace an API key hash selects (null: refused, unknown or revoked), and whether any
 * unrevoked key exists at all (what AUTH_REQUIRED=auto decides by), for a short time.
 *
 * Rule: an entry may be stale for at most `ttlMs` (API_KEY_CACHE_TTL_MS, 5 s by default), and then
 * the database is read again. Nothing else invalidates it: keys are revoked by `npm run keys --
 * revoke`, a separate process, so the TTL is the revocation bound: a revoked key stops working on
 * every instance within `ttlMs`, and a new key starts working within it. Whatever revokes or
 * re-points a key in this process calls `forget(keyHash)` (or `purge()`), so this instance sees it at
 * once. Bounded by entries (API_KEY_CACHE_MAX): when full, everything is dropped.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { workspaceId: string | null; until: number }>();
  private anyKey: { value: boolean; until: number } | null = null;

  constructor(
    private readonly ttlMs = 5_000,
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

  /** Whether an unrevoked key exists, as last read (undefined: not cached or expired). */
  getKeysExist(now = Date.now()): boolean | undefined {
    if (!this.anyKey || this.anyKey.until < now) return undefined;
    return this.anyKey.value;
  }

  setKeysExist(value: boolean, now = Date.now()): void {
    this.anyKey = { value, until: now + this.ttlMs };
  }

  forget(keyHash: string): void {
    this.entries.delete(keyHash);
    this.anyKey = null;
  }

  purge(): void {
    this.entries.clear();
    this.anyKey = null;
  }
}
