/**
 * The light rows (position, role, token counts, …) of finished messages, kept per session as one
 * run of consecutive positions, so that assembling a session again reads only what was appended
 * since.
 *
 * Rule: a kept row is never stale, on one server or on several, because a finished message never
 * changes (MESSAGE_IMMUTABLE), positions are never reused, and a session is only deleted with its
 * forks (a session that still exists never reaches a deleted ancestor's rows). Whatever breaks one
 * of these (deleting or editing a message, reusing a position) must call `forget(sessionId)` on
 * every instance; `deleteSession` calls it for each deleted session (hygiene: no id is reused).
 *
 * Bounded by weight, each row weighing `weigh(row)` (1 by default: then the bound counts rows; a
 * light row takes about 230 bytes, so 250,000 rows are about 60 MB; ROWS_CACHE_MAX_ROWS): whole
 * sessions are forgotten, least recently used first, and one session keeps at most
 * `maxRowsPerSession` rows (its newest: windows are read newest first;
 * ROWS_CACHE_MAX_ROWS_PER_SESSION). The same class keeps whole rows for message pages, weighed by
 * their characters (`PAGE_CACHE_MAX_CHARS`).
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
  /** The rows' total weight. */
  weight: number;
}

export class FinishedRowsCache<R extends FinishedRow> {
  private readonly runs = new Map<string, Kept<R>>();
  private total = 0;

  constructor(
    private readonly maxWeight = 250_000,
    private readonly maxRowsPerSession = 16_384,
    private readonly weigh: (row: R) => number = ONE,
  ) {}

  /** The positions [lo, hi) kept for `sessionId`, or null. */
  range(sessionId: string): { lo: number; hi: number } | null {
    const run = this.runs.get(sessionId);
    return run ? { lo: run.lo, hi: run.lo + run.rows.length } : null;
  }

  /** Rows [from, to) of `sessionId`, newest first; the range must lie within `range(sessionId)`. */
  newestFirst(sessionId: string, from: number, to: number): R[] {
    return this.oldestFirst(sessionId, from, to).reverse();
  }

  /** Rows [from, to) of `sessionId`, oldest first; the range must lie within `range(sessionId)`. */
  oldestFirst(sessionId: string, from: number, to: number): R[] {
    const run = this.runs.get(sessionId)!;
    // Used now: last to be forgotten.
    this.runs.delete(sessionId);
    this.runs.set(sessionId, run);
    return run.rows.slice(from - run.lo, to - run.lo);
  }

  /** Keeps what `rows` (of one session, any order) adds to its run: finished rows only. */
  add(sessionId: string, rows: readonly R[]): void {
    if (rows.length === 0) return;
    const sorted = [...rows].sort((a, b) => a.position - b.position);
    const kept = this.runs.get(sessionId) ?? null;
    let run: Run<R> | null = kept;
    const before = kept?.weight ?? 0;
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
    if (!run) return;
    if (run === kept) return;
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
    this.runs.delete(sessionId);
    this.total -= before;
    if (run.rows.length === 0) return;
    this.runs.set(sessionId, { ...run, weight });
    this.total += weight;
    for (const [oldest, other] of this.runs) {
      if (this.total <= this.maxWeight || oldest === sessionId) break;
      this.runs.delete(oldest);
      this.total -= other.weight;
    }
  }

  /** Drops what is kept of `sessionId`. */
  forget(sessionId: string): void {
    const run = this.runs.get(sessionId);
    if (!run) return;
    this.runs.delete(sessionId);
    this.total -= run.weight;
  }

  /** Weight kept, over all sessions (rows, with the default weight). */
  get size(): number {
    return this.total;
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
