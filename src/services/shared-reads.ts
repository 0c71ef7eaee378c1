import type { SqlClient } from '../db/sql.js';
import { keptReadsOf } from '../caches/kept-reads.js';

/**
 * Reads shared by the event streams of one instance: after a Redis reconnect (or a lost publish),
 * every open stream of a session needs the same counter and the same log page at the same moment,
 * and 1,000 watchers must not mean 1,000 identical queries. A stream may join a read in flight only
 * if that read was started after the stream learned it needed it (its trigger, a `readClock()`
 * value): events committed before the trigger are then visible to the read.
 *
 * A stream that comes too late for the read in flight waits for the one after it, started when
 * the one in flight settles and shared by every stream that came meanwhile: subscribers arriving
 * one by one then share a few reads instead of each running its own. On a database this process
 * alone writes, a settled read also serves later callers until the next write (caches/kept-reads.ts).
 */
let clock = 0;

/** The clock that orders triggers and read starts: a trigger noted now is before every read started later. */
export function readClock(): number {
  return clock;
}

interface InFlight {
  started: number;
  result: Promise<unknown>;
  /** The read that starts when this one settles. */
  queued?: Promise<unknown>;
}
const readsInFlight = new WeakMap<SqlClient, Map<string, InFlight>>();

/** The result of `read` under `key` on `sql`, shared with every caller whose trigger is before the read's start. */
export function sharedRead<T>(sql: SqlClient, key: string, trigger: number, read: () => Promise<T>): Promise<T> {
  const kept = keptReadsOf(sql).get(key);
  if (kept) return Promise.resolve(kept.value as T);
  let reads = readsInFlight.get(sql);
  if (!reads) readsInFlight.set(sql, (reads = new Map()));
  const hit = reads.get(key);
  if (hit && hit.started > trigger) return hit.result as Promise<T>;
  if (hit) {
    const inFlight = reads;
    // Once the read in flight settles: its result if it was kept (nothing written since it began),
    // else a new read, shared by every stream that came meanwhile.
    const next = () => {
      const kept = keptReadsOf(sql).get(key);
      return kept ? kept.value : startRead(sql, inFlight, key, read);
    };
    hit.queued ??= hit.result.then(next, next);
    return hit.queued as Promise<T>;
  }
  return startRead(sql, reads, key, read);
}

function startRead<T>(sql: SqlClient, reads: Map<string, InFlight>, key: string, read: () => Promise<T>): Promise<T> {
  const kept = keptReadsOf(sql);
  const mark = kept.mark();
  const entry: InFlight = { started: ++clock, result: read() };
  reads.set(key, entry);
  const settled = () => {
    if (reads.get(key) === entry) reads.delete(key);
  };
  entry.result.then((result) => {
    settled();
    kept.keep(mark, key, result);
  }, settled);
  return entry.result as Promise<T>;
}

/**
 * A read shared like the streams' reads by every caller that asks for the same key while it is in
 * flight or queued: what a subscription checks when it starts (its session is in the caller's
 * workspace), which a burst of subscribers of one session would each run.
 */
export function readShared<T>(sql: SqlClient, key: string, read: () => Promise<T>): Promise<T> {
  return sharedRead(sql, key, clock, read);
}
