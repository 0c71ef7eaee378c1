import { currentEventSequence, readEventsAfter } from '../db/stores/events.js';
import type { SqlClient } from '../db/sql.js';
import type { BusListener, EventBus, SessionEventMessage } from '../pubsub/bus.js';
import { PULL, type Pullable, type StepConsumer } from './pull-protocol.js';
import type { SharedReads } from './shared-reads.js';
import { eventsExpired } from './event-retention.js';

const REPLAY_PAGE = 500;
/** Live events a stream holds for a slow consumer before it falls back to reading the log. */
const MAX_LIVE_BACKLOG = 1_000;

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
  sources: EventStreamSources,
  sessionId: string,
  afterSequence: number | null,
  signal?: AbortSignal,
): SessionEventStream {
  return new EventStream(sources, sessionId, afterSequence, signal);
}

/** What every event stream of one app reads and listens through: made once (`ReadService`), held by each stream. */
export interface EventStreamSources {
  sql: SqlClient;
  bus: EventBus;
  /** The app's reads shared between streams (`SharedReads`). */
  shared: SharedReads;
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
   * parallel arrays, no pair object per subscriber and event).
   */
  private readonly live: SessionEventMessage[] = [];
  private readonly liveAt: number[] = [];
  /** Events ready to hand out, in order. */
  private readonly ready: SessionEventMessage[] = [];
  /** Read the log up to this sequence (null: to its end) before anything else; undefined: no read due. */
  private logUpTo: number | null | undefined;
  /** The bus said events may have been missed: compare with the session's counter. */
  private syncDue = false;
  /** When the stream learned it needs the pending counter read and log read (see `SharedReads.read`). */
  private syncTrigger: number;
  private logTrigger: number;
  private readonly startTrigger: number;
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
    private readonly sources: EventStreamSources,
    private readonly sessionId: string,
    afterSequence: number | null,
    private readonly signal?: AbortSignal,
  ) {
    this.startTrigger = this.logTrigger = this.syncTrigger = sources.shared.now();
    this.last = afterSequence === null ? null : Math.max(0, afterSequence);
    this.logUpTo = afterSequence === null ? undefined : null;
    sources.bus.subscribe(sessionId, this);
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
      // The next event in order, nothing before it, a consumer waiting: straight to it, without
      // passing through the queues.
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
      this.syncTrigger = this.sources.shared.now();
    } else {
      this.live.push(event);
      this.liveAt.push(this.sources.shared.now());
    }
    this.advance();
  }

  sync() {
    if (this.done) return;
    this.syncDue = true;
    this.syncTrigger = this.sources.shared.now();
    this.advance();
  }

  private finish() {
    if (this.done) return;
    this.done = true;
    this.sources.bus.unsubscribe(this.sessionId, this);
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
   * Not an async function: it runs for every subscriber on every event and nearly always finds
   * no read due, so it allocates no frame or promise for that.
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
    const { sessionId } = this;
    const { sql, shared } = this.sources;
    if (this.last === null) {
      const current = await shared.read(`sequence:${sessionId}`, this.startTrigger, () => currentEventSequence(sql, sessionId));
      if (this.done) return;
      this.last ??= current ?? 0;
      if (current === null) this.accept(sessionDeletedEvent(sessionId, this.last));
      return;
    }
    if (this.syncDue) {
      this.syncDue = false;
      const trigger = this.syncTrigger;
      const current = await shared.read(`sequence:${sessionId}`, trigger, () => currentEventSequence(sql, sessionId));
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
      const rows = await shared.read(`log:${sessionId}:${after}:${upTo}`, this.logTrigger, () =>
        readEventsAfter(sql, sessionId, after, upTo, REPLAY_PAGE),
      );
      if (this.done) return;
      // The log is gapless, so a read after `after` that skips a sequence lost events to the
      // retention sweep (a consumer that fell that far behind, or a sweep that raced a fold): the
      // stream cannot go on whole.
      let expected = after + 1;
      for (const row of rows) {
        if (row.sequence > expected) throw eventsExpired(sessionId, expected - 1, row.sequence);
        expected = row.sequence + 1;
      }
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
