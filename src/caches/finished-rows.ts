import { LRUCache } from 'lru-cache';

/**
 * The rows of finished messages, kept per session as one run of consecutive positions, so that
 * assembling a session again reads only what was appended since (light rows: position, role,
 * token counts, …), and a `Session.messages` page is served without a statement (whole rows).
 *
 * Rule: a kept row is never stale, on one server or on several, because a finished message never
 * changes (MESSAGE_IMMUTABLE), positions are never reused, and a session is only deleted with its
 * forks (a session that still exists never reaches a deleted ancestor's rows). Whatever breaks one
 * of these (deleting or editing a message, reusing a position) must call `forget(sessionId)` on
 * every instance; `deleteSession` calls it (through `AssemblyCaches.forget`) for each deleted
 * session (hygiene: no id is reused).
 *
 * Bounded by weight, each row weighing `weigh(row)` (1 by default: then the bound counts rows);
 * the bounds come from configuration (`config.caches.rowsMax`, `rowsMaxPerSession`, and
 * `pageMaxChars` for whole rows, shares of CACHE_MEMORY_MB, weighed by their characters). Whole sessions are forgotten,
 * least recently used first, and one session keeps at most `maxRowsPerSession` rows, its newest
 * (windows are read newest first). A bound of 0 keeps nothing.
 */
export interface FinishedRow {
  position: number;
  generating: boolean;
}

interface Run<R> {
  /** Position of rows[0]; rows[i].position === lo + i. */
  lo: number;
  rows: R[];
}

const ONE = () => 1;

interface Kept<R> extends Run<R> {
  /** The rows' total weight (at least 1: lru-cache weighs an entry by a positive integer). */
  weight: number;
}

export class FinishedRowsCache<R extends FinishedRow> {
  private readonly runs: LRUCache<string, Kept<R>> | null;

  constructor(
    private readonly maxWeight = 250_000,
    private readonly maxRowsPerSession = 16_384,
    private readonly weigh: (row: R) => number = ONE,
  ) {
    this.runs = maxWeight > 0 ? new LRUCache<string, Kept<R>>({ maxSize: maxWeight, sizeCalculation: (run) => run.weight }) : null;
  }

  /** The positions [lo, hi) kept for `sessionId`, or null. */
  range(sessionId: string): { lo: number; hi: number } | null {
    const run = this.runs?.peek(sessionId);
    return run ? { lo: run.lo, hi: run.lo + run.rows.length } : null;
  }

  /** Rows [from, to) of `sessionId`, newest first; the range must lie within `range(sessionId)`. */
  newestFirst(sessionId: string, from: number, to: number): R[] {
    return this.oldestFirst(sessionId, from, to).reverse();
  }

  /** Rows [from, to) of `sessionId`, oldest first; the range must lie within `range(sessionId)`. */
  oldestFirst(sessionId: string, from: number, to: number): R[] {
    // A read makes the session the most recently used.
    const run = this.runs!.get(sessionId)!;
    return run.rows.slice(from - run.lo, to - run.lo);
  }

  /** Keeps what `rows` (of one session, any order) adds to its run: finished rows only. */
  add(sessionId: string, rows: readonly R[]): void {
    if (rows.length === 0 || !this.runs) return;
    const sorted = [...rows].sort((a, b) => a.position - b.position);
    const kept = this.runs.peek(sessionId) ?? null;
    let run: Run<R> | null = kept;
    // Each stretch of consecutive finished rows joins the run when it touches it; a stretch apart
    // from it replaces it when it is newer (the next assembly starts from the newest messages).
    for (let start = 0; start < sorted.length; ) {
      let end = start;
      while (end < sorted.length && !sorted[end].generating && (end === start || sorted[end].position === sorted[end - 1].position + 1))
        end++;
      if (end === start) {
        start++;
        continue;
      }
      run = merge(run, { lo: sorted[start].position, rows: sorted.slice(start, end).map((row) => Object.freeze(row)) });
      start = end;
    }
    if (!run || run === kept) return;
    if (run.rows.length > this.maxRowsPerSession) {
      const cut = run.rows.length - this.maxRowsPerSession;
      run = { lo: run.lo + cut, rows: run.rows.slice(cut) };
    }
    // The newest rows that fit the whole bound (one session may not take more than all of it).
    let weight = 0;
    let first = run.rows.length;
    if (this.weigh === ONE) {
      first = Math.max(0, run.rows.length - this.maxWeight);
      weight = run.rows.length - first;
    } else {
      while (first > 0 && weight + this.weigh(run.rows[first - 1]) <= this.maxWeight) weight += this.weigh(run.rows[--first]);
    }
    if (first > 0) run = { lo: run.lo + first, rows: run.rows.slice(first) };
    if (run.rows.length === 0) {
      this.runs.delete(sessionId);
      return;
    }
    this.runs.set(sessionId, { ...run, weight: Math.max(1, weight) });
  }

  /** Drops what is kept of `sessionId`. */
  forget(sessionId: string): void {
    this.runs?.delete(sessionId);
  }

  /** Weight kept, over all sessions (rows, with the default weight). */
  get size(): number {
    return this.runs?.calculatedSize ?? 0;
  }
}

function merge<R>(run: Run<R> | null, stretch: Run<R>): Run<R> {
  if (!run) return stretch;
  const runHi = run.lo + run.rows.length;
  const stretchHi = stretch.lo + stretch.rows.length;
  if (stretch.lo > runHi || stretchHi < run.lo) return stretchHi > runHi ? stretch : run;
  if (stretch.lo >= run.lo && stretchHi <= runHi) return run;
  const below = stretch.lo < run.lo ? stretch.rows.slice(0, run.lo - stretch.lo) : [];
  const above = stretchHi > runHi ? stretch.rows.slice(runHi - stretch.lo) : [];
  return { lo: Math.min(run.lo, stretch.lo), rows: below.length ? [...below, ...run.rows, ...above] : run.rows.concat(above) };
}
