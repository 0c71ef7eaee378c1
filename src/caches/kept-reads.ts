import { LRUCache } from 'lru-cache';
import type { SqlClient } from '../db/sql.js';

/** Values looked at to size one result; a larger result (a full replay page of wrapped events) is not kept. */
const MAX_SIZED_VALUES = 20_000;

/**
 * Results of the reads the session event streams share (services/shared-reads.ts), kept after
 * they settle on a database this process alone writes (PGlite: `sql.writes()` is its write count;
 * null elsewhere, and then nothing is kept). Keys are the shared reads' keys (`sequence:<session>`,
 * `log:<session>:<after>:<upTo>`, `in:<workspace>:<session>`).
 *
 * Rule: a result read while the write count stood at N is what the same read would return for as
 * long as the count stays at N (no write began or ended since), so it serves every caller until
 * the next write; the whole cache is dropped as soon as the count moves, and a read during which it
 * moved is not kept. Nothing else can make an entry stale, so nobody needs to call `forget`; it is
 * there for a caller that knows a key is gone. Bounded by the characters of the values kept
 * (`config.caches.keptReadsMaxChars`, a share of CACHE_MEMORY_MB: an event's payload can carry a
 * streamed text), least recently used first; a result of more than MAX_SIZED_VALUES values is not
 * kept. One per app (`buildApp`), for its `reads` client.
 */
export class KeptReads {
  private readonly results: LRUCache<string, { value: unknown }>;
  private at: number | null = null;

  constructor(
    private readonly sql: SqlClient,
    private readonly maxChars: number,
  ) {
    this.results = new LRUCache<string, { value: unknown }>({ maxSize: maxChars });
  }

  /** The write count to pass to `keep` once a read begun now has settled; null when nothing can be kept. */
  mark(): number | null {
    return this.sql.writes?.() ?? null;
  }

  /** The kept result of `key`, if it is current. */
  get(key: string): { value: unknown } | undefined {
    const now = this.mark();
    if (now === null) return undefined;
    this.moveTo(now);
    return this.results.get(key);
  }

  /** Keeps `value`, the result of a read of `key` begun at `mark`, when no write began or ended since. */
  keep(mark: number | null, key: string, value: unknown): void {
    if (mark === null || this.mark() !== mark) return;
    const chars = sizeOf(value);
    if (chars > this.maxChars) return;
    this.moveTo(mark);
    this.results.set(key, { value }, { size: Math.max(1, chars) });
  }

  forget(key: string): void {
    this.results.delete(key);
  }

  /** Drops what was kept at another write count. */
  private moveTo(at: number) {
    if (this.at === at) return;
    this.at = at;
    this.results.clear();
  }
}

/** The characters `value` holds (string lengths, 8 per other value), or Infinity past `MAX_SIZED_VALUES` values. */
function sizeOf(value: unknown): number {
  const stack = [value];
  let chars = 0;
  let values = 1;
  while (stack.length) {
    const next = stack.pop();
    if (typeof next === 'string') chars += next.length;
    else if (next === null || typeof next !== 'object') chars += 8;
    else
      for (const child of Object.values(next)) {
        if (++values > MAX_SIZED_VALUES) return Number.POSITIVE_INFINITY;
        stack.push(child);
      }
  }
  return chars;
}
