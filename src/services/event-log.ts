import { currentEventSequence, readEventsAfter } from '../db/stores/events.js';
import type { SqlClient } from '../db/sql.js';
import type { BusListener, EventBus, SessionEventMessage } from '../pubsub/event-bus.js';
import { PULL, type Pullable, type StepConsumer } from '../live/pull.js';

// The log's statements (the append, and the reads the streams below make) live in the events store.
export { appendEvents, type NewSessionEvent } from '../db/stores/events.js';

/** The type of the live-only event that ends a deleted session's streams. */
export const SESSION_DELETED = 'SESSION_DELETED';

/**
 * The last event of a deleted session's stream. Its log rows went with the session, so it is never
 * stored: it is published once (after the delete commits) with the sequence after the session's
 * last one, and a stream that delivers it completes.
 */
export function sessionDeletedEvent(sessionId: string, lastSequence: number): SessionEventMessage {
  return {
    // Never stored, so no log id can collide. Deterministic, so every stream that ends at the same
    // sequence (the published event, or one made up by a stream that found the session gone)
    // shares its execution; the sequence is part of it because shared results carry it.
    id: `${sessionId}:deleted:${Number(lastSequence) + 1}`,
    sessionId,
    sequence: Number(lastSequence) + 1,
    type: SESSION_DELETED,
    turnId: null,
    messageId: null,
    payload: {},
    createdAt: new Date().toISOString(),
  };
}

/** Publishes events of a committed transaction. */
export function publishAll(bus: EventBus, events: SessionEventMessage[]) {
  for (const event of events) bus.publish(event);
}

/**
 * Runs a write transaction (`run` collects the events it appends), again with fresh events on a
 * serialization failure or deadlock (`retryable`), at most five times; publishes the events only
 * once it has committed.
 */
export async function writeThenPublish<T>(
  bus: EventBus,
  run: (events: SessionEventMessage[]) => Promise<T>,
  retryable: (error: unknown) => boolean,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const events: SessionEventMessage[] = [];
    try {
      const result = await run(events);
      publishAll(bus, events);
      return result;
    } catch (error) {
      if (attempt < 5 && retryable(error)) continue;
      throw error;
    }
  }
}

const REPLAY_PAGE = 500;
/** Live events a stream holds for a slow consumer before it falls back to reading the log. */
const MAX_LIVE_BACKLOG = 1_000;

/**
 * Reads shared by the streams of one instance: after a Redis reconnect (or a lost publish), every
 * open stream of a session needs the same counter and the same log page at the same moment, and
 * 1,000 watchers must not mean 1,000 identical queries. A stream may join a read in flight only if
 * that read was started after the stream learned it needed it (its trigger): events committed
 * before the trigger are then visible to the read. `readClock` orders triggers and read starts.
 *
 * A stream that comes too late for the read in flight waits for the one after it, started when
 * the one in flight settles and shared by every stream that came meanwhile: subscribers arriving
 * one by one (a burst of 1,000 subscribes to one session) then share a few reads instead of each
 * running its own, queued behind the others, with its garbage held for as long.
 */
let readClock = 0;
interface InFlight {
  started: number;
  result: Promise<unknown>;
  /** The read that starts when this one settles. */
  queued?: Promise<unknown>;
}
const readsInFlight = new WeakMap<SqlClient, Map<string, InFlight>>();

/**
 * Reads kept after they settle, on a database this process alone writes (PGlite: `sql.writes()`
 * is its write count; null elsewhere): a result read while the count stood at N is what the same
 * read would return for as long as it stays at N (no write began or ended since), so it serves
 * every stream, whatever its trigger, until the next write. Subscribers of a session that arrive
 * one at a time (reads on PGlite are quick and rarely overlap) then share one workspace check and
 * one log read instead of running one each: each PGlite statement left about 9 KB of short-lived
 * objects that a subscribe burst, holding them across its awaits, moved into the old generation.
 * Bounded by the characters of the strings kept (`MAX_KEPT_CHARS`: an event's payload can carry a
 * streamed text), and dropped whole when the count moves.
 */
interface KeptReads {
  at: number;
  chars: number;
  results: Map<string, unknown>;
}
const keptReads = new WeakMap<SqlClient, KeptReads>();
/** Characters (string lengths, 8 per other value) kept across all kept reads of one database. */
const MAX_KEPT_CHARS = 4 * 1024 * 1024;
/** Values looked at to size one result; a larger result (a full replay page of wrapped events) is not kept. */
const MAX_SIZED_VALUES = 20_000;

/** The kept reads of `sql` as of its write count `at`: emptied when the count has moved. */
function keptAt(sql: SqlClient, at: number): KeptReads {
  let kept = keptReads.get(sql);
  if (!kept) keptReads.set(sql, (kept = { at, chars: 0, results: new Map() }));
  if (kept.at !== at) {
    kept.at = at;
    kept.chars = 0;
    kept.results.clear();
  }
  return kept;
}

/** The result of `key` kept on `sql`, if it is current. */
function keptResult(sql: SqlClient, key: string): { value: unknown } | undefined {
  const writes = sql.writes?.() ?? null;
  if (writes === null) return undefined;
  const { results } = keptAt(sql, writes);
  return results.has(key) ? { value: results.get(key) } : undefined;
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

function sharedRead<T>(sql: SqlClient, key: string, trigger: number, read: () => Promise<T>): Promise<T> {
  const kept = keptResult(sql, key);
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
      const kept = keptResult(sql, key);
      return kept ? kept.value : startRead(sql, inFlight, key, read);
    };
    hit.queued ??= hit.result.then(next, next);
    return hit.queued as Promise<T>;
  }
  return startRead(sql, reads, key, read);
}

function startRead<T>(sql: SqlClient, reads: Map<string, InFlight>, key: string, read: () => Promise<T>): Promise<T> {
  const mark = sql.writes?.() ?? null;
  const entry: InFlight = { started: ++readClock, result: read() };
  reads.set(key, entry);
  const forget = () => {
    if (reads.get(key) === entry) reads.delete(key);
  };
  entry.result.then((result) => {
    forget();
    keep(sql, mark, key, result);
  }, forget);
  return entry.result as Promise<T>;
}

/** Keeps a read's result (see `KeptReads`) when no write began or ended while it ran. */
function keep(sql: SqlClient, mark: number | null, key: string, result: unknown) {
  if (mark === null || sql.writes?.() !== mark) return;
  const chars = sizeOf(result);
  if (chars > MAX_KEPT_CHARS) return;
  const kept = keptAt(sql, mark);
  if (kept.chars + chars > MAX_KEPT_CHARS) {
    kept.chars = 0;
    kept.results.clear();
  }
  kept.chars += chars;
  kept.results.set(key, result);
}

/**
 * A read shared like the streams' reads (see `sharedRead`) by every caller that asks for the same
 * key while it is in flight or queued: what a subscription checks when it starts (its session is
 * in the caller's workspace), which a burst of subscribers of one session would each run.
 */
export function readShared<T>(sql: SqlClient, key: string, read: () => Promise<T>): Promise<T> {
  return sharedRead(sql, key, readClock, read);
}

/** An async iterator whose `return()` takes effect at once, even while a `next()` is waiting. */
export interface SessionEventStream extends AsyncIterableIterator<SessionEventMessage>, Pullable<SessionEventMessage> {
  return(): Promise<IteratorResult<SessionEventMessage>>;
}

/**
 * One session's events as a stream: with `afterSequence`, every stored event after it first, then
 * live ones; without, live ones from now. Redis is the doorbell, the log the truth: the stream
 * remembers the last sequence it delivered, and when a live event arrives with a gap, or the bus
 * says events may have been missed (its SUBSCRIBE was just confirmed, or the connection came back
 * after a failure), it reads the log before going on. So each event arrives once, in order, across
 * lost publishes and Redis restarts, and replay never waits for Redis. An event of type
 * `SESSION_DELETED` is the last one; a sync that finds the session gone ends the stream the same
 * way.
 *
 * Closing (`return()`, or `signal` aborting) releases the bus listener at once: a client that
 * leaves does not hold memory or a Redis channel until the session's next event.
 */
export function sessionEventStream(
  sql: SqlClient,
  bus: EventBus,
  sessionId: string,
  afterSequence: number | null,
  signal?: AbortSignal,
): SessionEventStream {
  return new EventStream(sql, bus, sessionId, afterSequence, signal);
}

/**
 * The stream behind `sessionEventStream`, and its own bus listener. A class, not closures over
 * local variables: every subscriber holds one for as long as it stays, and its methods live on
 * the prototype instead of a dozen closures (and their names) per subscriber.
 */
class EventStream implements SessionEventStream, BusListener {
  /** The last sequence handed out (or known to be before the stream's start); null until read. */
  private last: number | null;
  /**
   * Live events not yet looked at, in arrival order, and the read clock when each arrived (two
   * arrays: a pair object per subscriber per event was garbage for nothing).
   */
  private readonly live: SessionEventMessage[] = [];
  private readonly liveAt: number[] = [];
  /** Events ready to hand out, in order. */
  private readonly ready: SessionEventMessage[] = [];
  /** Read the log up to this sequence (null: to its end) before anything else; undefined: no read due. */
  private logUpTo: number | null | undefined;
  /** The bus said events may have been missed: compare with the session's counter. */
  private syncDue = false;
  /** When the stream learned it needs the pending counter read and log read (see `sharedRead`). */
  private syncTrigger = readClock;
  private logTrigger = readClock;
  private readonly startTrigger = readClock;
  /** The live event whose gap was already filled from the log (so it is taken even if the log had less). */
  private gapFilledFor: SessionEventMessage | null = null;
  private ending = false;
  private done = false;
  /** `advance` is running, or a read it started is in flight: one at a time. */
  private working = false;
  /** Who waits for the next step: a `next()` promise's or a pulling consumer (see `PULL`). */
  private waiting: StepConsumer<SessionEventMessage> | null = null;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly sql: SqlClient,
    private readonly bus: EventBus,
    private readonly sessionId: string,
    afterSequence: number | null,
    private readonly signal?: AbortSignal,
  ) {
    this.last = afterSequence === null ? null : Math.max(0, afterSequence);
    this.logUpTo = afterSequence === null ? undefined : null;
    bus.subscribe(sessionId, this);
    if (signal) {
      this.onAbort = () => this.finish();
      signal.addEventListener('abort', this.onAbort);
      if (signal.aborted) this.finish();
    }
  }

  // The bus tells every local stream of an event in one loop. The next event in order goes to the
  // waiting consumer at once; an event that needs a read first (a gap) starts it in a microtask,
  // so that every stream told of the same event notes the same trigger before the first read
  // starts, and they can share it.
  event(event: SessionEventMessage) {
    if (this.done) return;
    if (this.waiting && !this.working && this.live.length === 0 && this.ready.length === 0 && this.follows(event)) {
      // The next event in order, nothing before it, a consumer waiting: straight to it. Through the
      // queues, each emptied array grew a new backing store per event (about 400 B per subscriber).
      this.last = event.sequence;
      const consumer = this.waiting;
      this.waiting = null;
      try {
        consumer.step({ value: event, done: false });
      } catch (error) {
        this.failWith(error);
      }
      return;
    }
    if (this.live.length >= MAX_LIVE_BACKLOG) {
      // A consumer this far behind reads from the log instead: its backlog is dropped (and its
      // memory with it) and the next sync reads what it missed, a page at a time as it pulls.
      this.live.length = 0;
      this.liveAt.length = 0;
      this.syncDue = true;
      this.syncTrigger = readClock;
    } else {
      this.live.push(event);
      this.liveAt.push(readClock);
    }
    this.advance();
  }

  sync() {
    if (this.done) return;
    this.syncDue = true;
    this.syncTrigger = readClock;
    this.advance();
  }

  private finish() {
    if (this.done) return;
    this.done = true;
    this.bus.unsubscribe(this.sessionId, this);
    if (this.onAbort) this.signal?.removeEventListener('abort', this.onAbort);
    this.live.length = 0;
    this.liveAt.length = 0;
    this.ready.length = 0;
    const consumer = this.waiting;
    this.waiting = null;
    consumer?.step({ value: undefined, done: true });
  }

  /** The stream failed: it ends, and its waiting consumer gets the error. */
  private failWith(error: unknown) {
    const consumer = this.waiting;
    this.waiting = null;
    this.finish();
    consumer?.fail(error);
  }

  /** Whether `event` comes right after the last one handed out, with no read due: it can go out as it comes. */
  private follows(event: SessionEventMessage): boolean {
    return (
      this.last !== null &&
      event.sequence === this.last + 1 &&
      event.type !== SESSION_DELETED &&
      !this.ending &&
      !this.syncDue &&
      this.logUpTo === undefined
    );
  }

  private accept(event: SessionEventMessage) {
    this.last = Math.max(this.last ?? 0, event.sequence);
    this.ready.push(event);
    if (event.type === SESSION_DELETED) this.ending = true;
  }

  /**
   * Advances the stream while a consumer waits, synchronously as far as no read is due; a due read
   * runs in `read`, which advances again once it is done. One run at a time.
   *
   * Not an async function: one is called for every subscriber of every event, and each call
   * allocated its frame and promise (about 1 KB per subscriber and event, a quarter of all the
   * server allocated while streaming to 100 watchers) to find, nearly always, that no read was due.
   */
  private advance(): void {
    if (this.working) return;
    this.working = true;
    let reading = false;
    try {
      while (this.waiting && !this.done) {
        if (this.ready.length) {
          const event = this.ready.shift()!;
          const consumer = this.waiting;
          this.waiting = null;
          if (this.ending && this.ready.length === 0) {
            // Close, then hand out the final event: a consumer that asks again at once (a pulling
            // one does so from inside this call) sees the end.
            this.finish();
            consumer.step({ value: event, done: false });
            return;
          }
          consumer.step({ value: event, done: false });
          continue;
        }
        if (this.ending) {
          this.finish();
          return;
        }
        if (this.last === null || this.syncDue || this.logUpTo !== undefined) {
          // After the microtasks already queued: every stream told of the same event by the bus's
          // loop has noted its trigger by then.
          reading = true;
          queueMicrotask(() => void this.read());
          return;
        }
        const next = this.live[0];
        if (!next) return;
        if (next.type !== SESSION_DELETED && next.sequence <= this.last) {
          this.live.shift();
          this.liveAt.shift();
          continue;
        }
        if (next.type !== SESSION_DELETED && next.sequence > this.last + 1 && this.gapFilledFor !== next) {
          this.gapFilledFor = next;
          this.logUpTo = next.sequence - 1;
          this.logTrigger = Math.max(this.logTrigger, this.liveAt[0]);
          continue;
        }
        this.live.shift();
        this.liveAt.shift();
        this.accept(next);
      }
    } catch (error) {
      this.failWith(error);
    } finally {
      if (!reading) this.working = false;
    }
  }

  /** Runs the read `advance` found due (it holds `working` for it), then advances on. */
  private async read() {
    try {
      if (!this.done) await this.readDue();
    } catch (error) {
      this.working = false;
      return this.failWith(error);
    }
    this.working = false;
    if (!this.done) this.advance();
  }

  /** One read: the session's counter at the start or on a sync, or a page of the log. */
  private async readDue() {
    const { sql, sessionId } = this;
    if (this.last === null) {
      const current = await sharedRead(sql, `sequence:${sessionId}`, this.startTrigger, () => currentEventSequence(sql, sessionId));
      if (this.done) return;
      this.last ??= current ?? 0;
      if (current === null) this.accept(sessionDeletedEvent(sessionId, this.last));
      return;
    }
    if (this.syncDue) {
      this.syncDue = false;
      const trigger = this.syncTrigger;
      const current = await sharedRead(sql, `sequence:${sessionId}`, trigger, () => currentEventSequence(sql, sessionId));
      if (this.done) return;
      if (current === null) {
        this.accept(sessionDeletedEvent(sessionId, this.last));
      } else if (current > this.last) {
        this.logUpTo = null;
        this.logTrigger = Math.max(this.logTrigger, trigger);
      }
      return;
    }
    if (this.logUpTo !== undefined) {
      const upTo = this.logUpTo;
      const after = this.last;
      const rows = await sharedRead(sql, `log:${sessionId}:${after}:${upTo}`, this.logTrigger, () =>
        readEventsAfter(sql, sessionId, after, upTo, REPLAY_PAGE),
      );
      if (this.done) return;
      for (const row of rows) if (row.sequence > this.last) this.accept(row);
      // Another page is due only when this one was full; otherwise the read is done, unless a
      // wider read was asked for while this one ran.
      if (rows.length < REPLAY_PAGE && this.logUpTo === upTo) this.logUpTo = undefined;
    }
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next(): Promise<IteratorResult<SessionEventMessage>> {
    return new Promise((resolve, reject) => this[PULL]({ step: resolve, fail: reject }));
  }

  [PULL](consumer: StepConsumer<SessionEventMessage>) {
    if (this.done) return consumer.step({ value: undefined, done: true });
    if (this.waiting) return consumer.fail(new Error('sessionEventStream: next() called while another next() is pending'));
    this.waiting = consumer;
    this.advance();
  }

  return(): Promise<IteratorResult<SessionEventMessage>> {
    this.finish();
    return Promise.resolve({ value: undefined, done: true });
  }
}

/**
 * The events of `stream` that `keep` accepts (turnEvents takes a session's turn events this way).
 * Unlike an `async function*` wrapper, `return()` reaches the stream at once, so a client that
 * leaves is released without waiting for the session's next event.
 */
export function filterEvents(stream: SessionEventStream, keep: (event: SessionEventMessage) => boolean): SessionEventStream {
  return new FilteredEvents(stream, keep);
}

/** The stream `filterEvents` returns: one object per subscriber, pulling its source without a promise. */
class FilteredEvents implements SessionEventStream, StepConsumer<SessionEventMessage> {
  private consumer: StepConsumer<SessionEventMessage> | null = null;

  constructor(
    private readonly stream: SessionEventStream,
    private readonly keep: (event: SessionEventMessage) => boolean,
  ) {}

  [PULL](consumer: StepConsumer<SessionEventMessage>) {
    if (this.consumer) return consumer.fail(new Error('filterEvents: next() called while another next() is pending'));
    this.consumer = consumer;
    this.stream[PULL](this);
  }

  /** The source's step: passed on if kept (or the end); otherwise the next one is asked for. */
  step(step: IteratorResult<SessionEventMessage>) {
    // The source hands ready events in a loop: asking again from here does not recurse.
    if (!step.done && !this.keep(step.value)) return this.stream[PULL](this);
    const consumer = this.consumer;
    this.consumer = null;
    consumer?.step(step);
  }

  fail(error: unknown) {
    const consumer = this.consumer;
    this.consumer = null;
    consumer?.fail(error);
  }

  next(): Promise<IteratorResult<SessionEventMessage>> {
    return new Promise((resolve, reject) => this[PULL]({ step: resolve, fail: reject }));
  }

  return(): Promise<IteratorResult<SessionEventMessage>> {
    return this.stream.return();
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}
