/**
 * How big the in-process caches may grow: one memory budget (CACHE_MEMORY_MB) split in fixed shares.
 */
import { getHeapStatistics } from 'node:v8';

/** Sizes of the in-process caches (src/caches/; each states its rule beside it), from CACHE_MEMORY_MB. */
export interface CacheConfig {
  /** Characters of parsed message parts kept. */
  partsMaxChars: number;
  /** Light message rows kept over all sessions. */
  rowsMax: number;
  /** Light message rows kept for one session; whole rows for pages too. */
  rowsMaxPerSession: number;
  /** Characters of whole finished message rows kept for `Session.messages` pages. */
  pageMaxChars: number;
  /** Session rows kept when this process is the database's only writer (PGlite). */
  sessionRowsMax: number;
  /** Sessions whose window hint is kept. */
  windowHintsMax: number;
  /** Sessions whose leading row (position 0) is kept (caches/first-rows.ts). */
  firstRowsMax: number;
  /** API key lookups kept. */
  apiKeyMax: number;
  /**
   * How long an API key lookup is trusted, in ms (API_KEY_CACHE_TTL_MS): the bound on how long a key
   * revoked with `npm run keys -- revoke` keeps working on an instance.
   */
  apiKeyTtlMs: number;
  /** Distinct subscription selections given a short id for sharing executions, and query texts kept once for every WebSocket subscriber. */
  subscriptionShapesMax: number;
  /** Characters of the event streams' settled reads kept until the next write (PGlite; caches/kept-reads.ts). */
  keptReadsMaxChars: number;
  /** Characters of long texts whose token counts the worker made ahead (caches/token-precount.ts). */
  precountMaxChars: number;
}

/** The cache budget that DEFAULT_CACHE_CONFIG's sizes fill, in MB; any other budget scales every size by budget / this. */
export const CACHE_REFERENCE_MB = 128;

/** The sizes at CACHE_REFERENCE_MB: the fixed shares in which a budget is split. */
export const DEFAULT_CACHE_CONFIG: CacheConfig = {
  partsMaxChars: 32_000_000,
  rowsMax: 250_000,
  rowsMaxPerSession: 16_384,
  pageMaxChars: 8_000_000,
  sessionRowsMax: 10_000,
  windowHintsMax: 10_000,
  firstRowsMax: 10_000,
  apiKeyMax: 10_000,
  apiKeyTtlMs: 5_000,
  subscriptionShapesMax: 1_000,
  keptReadsMaxChars: 4_000_000,
  precountMaxChars: 16_000_000,
};

/** The cache sizes for a budget of `memoryMb`: each of DEFAULT_CACHE_CONFIG's scaled, at least 1. `apiKeyTtlMs` is not a size. */
export function cacheSizes(memoryMb: number, apiKeyTtlMs = DEFAULT_CACHE_CONFIG.apiKeyTtlMs): CacheConfig {
  const scaled = (size: number) => Math.max(1, Math.floor((size * memoryMb) / CACHE_REFERENCE_MB));
  const sizes = { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs };
  for (const key of Object.keys(sizes) as (keyof CacheConfig)[]) if (key !== 'apiKeyTtlMs') sizes[key] = scaled(sizes[key]);
  return sizes;
}

/** CACHE_MEMORY_MB's default: a quarter of V8's heap limit, at most CACHE_REFERENCE_MB. */
export function defaultCacheMemoryMb(heapLimitBytes = getHeapStatistics().heap_size_limit): number {
  return Math.max(1, Math.min(CACHE_REFERENCE_MB, Math.floor(heapLimitBytes / 2 ** 20 / 4)));
}
