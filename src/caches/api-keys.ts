import { LRUCache } from 'lru-cache';
import type { KeyScope } from '../config.js';

/** What a valid key grants: its workspace and its scope. */
export interface KeyGrant {
  workspaceId: string;
  scope: KeyScope;
  /** A share token's (`sgs_…`): the one session it reads, its link, and when it expires (ms since the epoch; null: never). Absent for API keys. */
  share?: ShareGrant;
}

/** What a share token grants beyond READ: one session, until `expiresAt` (checked on every use, never cached past it). */
export interface ShareGrant {
  sessionId: string;
  linkId: string;
  /** The token's SHA-256 (what the cache and the table key it by). */
  tokenHash: string;
  expiresAt: number | null;
}

/** The clock the TTL is measured on (lru-cache's `perf`): `performance` unless a test passes its own. */
export interface Clock {
  now(): number;
}

/**
 * Which workspace an API key (or share token) hash selects, with the key's scope (null: refused, unknown or revoked), and whether any
 * unrevoked key exists at all (what AUTH_REQUIRED=auto decides by), for a short time.
 *
 * Rule: an entry may be stale for at most `ttlMs`, and then the database is read again. Nothing
 * else invalidates it: keys are revoked by `npm run keys -- revoke`, a separate process, so the TTL
 * is the revocation bound: a revoked key stops working on every instance within `ttlMs`, and a new
 * key starts working within it. Whatever revokes or re-points a key in this process calls
 * `forget(keyHash)` (or `purge()`), so this instance sees it at once.
 *
 * The TTL and the bound on entries come from configuration (API_KEY_CACHE_TTL_MS,
 * `config.caches.apiKeyMax`); when full, the least recently used lookup is forgotten. A TTL or a bound
 * of 0 keeps nothing.
 */
export class ApiKeyCache {
  private readonly entries: LRUCache<string, { grant: KeyGrant | null }> | null;
  private readonly anyKey: LRUCache<'any', { exist: boolean }> | null;

  constructor(ttlMs = 5_000, maxEntries = 10_000, clock: Clock = performance) {
    // ttlResolution 0: every expiry check reads the clock (no now cached between checks).
    const expiring = { ttl: ttlMs, ttlResolution: 0, perf: clock };
    const keeps = ttlMs > 0 && maxEntries > 0;
    this.entries = keeps ? new LRUCache({ ...expiring, max: maxEntries }) : null;
    this.anyKey = keeps ? new LRUCache({ ...expiring, max: 1 }) : null;
  }

  /** The cached answer for `keyHash` (undefined: not cached or expired). */
  get(keyHash: string): KeyGrant | null | undefined {
    return this.entries?.get(keyHash)?.grant;
  }

  set(keyHash: string, grant: KeyGrant | null): void {
    this.entries?.set(keyHash, { grant });
  }

  /** Whether an unrevoked key exists, as last read (undefined: not cached or expired). */
  getKeysExist(): boolean | undefined {
    return this.anyKey?.get('any')?.exist;
  }

  setKeysExist(exist: boolean): void {
    this.anyKey?.set('any', { exist });
  }

  /** Forgets the lookup of `keyHash`, and whether any key exists. */
  forget(keyHash: string): void {
    this.entries?.delete(keyHash);
    this.anyKey?.clear();
  }

  purge(): void {
    this.entries?.clear();
    this.anyKey?.clear();
  }
}
