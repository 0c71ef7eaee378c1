import type { KeptReads } from '../caches/kept-reads.js';

interface InFlight {
  started: number;
  result: Promise<unknown>;
  /** The read that starts when this one settles. */
  queued?: Promise<unknown>;
}

/**
 * Reads shared by the event streams of one app: after a Redis reconnect (or a lost publish),
 * every open stream of a session needs the same counter and the same log page at the same moment,
 * and 1,000 watchers must not mean 1,000 identical queries. A stream may join a read in flight only
 * if that read was started after the stream learned it needed it (its trigger, a `now()` value):
 * events committed before the trigger are then visible to the read.
 *
 * A stream that comes too late for the read in flight waits for the one after it, started when
 * the one in flight settles and shared by every stream that came meanwhile: subscribers arriving
 * one by one then share a few reads instead of each running its own. On a database this process
 * alone writes, a settled read also serves later callers until the next write (caches/kept-reads.ts).
 *
 * One per app (`buildApp`), for its one database: keys name what is read, not where.
 */
export class SharedReads {
  /** The clock that orders triggers and read starts; it only moves when a read starts. */
  private clock = 0;
  private readonly inFlight = new Map<string, InFlight>();

  constructor(private readonly kept: KeptReads) {}

  /** The clock's value: a trigger noted now is before every read started later. */
  now(): number {
    return this.clock;
  }

  /** The result of `read` under `key`, shared with every caller whose trigger is before the read's start. */
  read<T>(key: string, trigger: number, read: () => Promise<T>): Promise<T> {
    const kept = this.kept.get(key);
    if (kept) return Promise.resolve(kept.value as T);
    const hit = this.inFlight.get(key);
    if (hit && hit.started > trigger) return hit.result as Promise<T>;
    if (hit) {
      // Once the read in flight settles: its result if it was kept (nothing written since it began),
      // else a new read, shared by every stream that came meanwhile.
      const next = () => {
        const kept = this.kept.get(key);
        return kept ? kept.value : this.start(key, read);
      };
      hit.queued ??= hit.result.then(next, next);
      return hit.queued as Promise<T>;
    }
    return this.start(key, read);
  }

  /**
   * A read shared like the streams' reads by every caller that asks for the same key while it is in
   * flight or queued: what a subscription checks when it starts (its session is in the caller's
   * workspace), which a burst of subscribers of one session would each run.
   */
  readFresh<T>(key: string, read: () => Promise<T>): Promise<T> {
    return this.read(key, this.clock, read);
  }

  private start<T>(key: string, read: () => Promise<T>): Promise<T> {
    const mark = this.kept.mark();
    const entry: InFlight = { started: ++this.clock, result: read() };
    this.inFlight.set(key, entry);
    const settled = () => {
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    };
    entry.result.then((result) => {
      settled();
      this.kept.keep(mark, key, result);
    }, settled);
    return entry.result as Promise<T>;
  }
}
