import { currentEventSequence, readEventsAfter } from '../db/stores/events.js';
import type { SqlClient } from '../db/sql.js';
import type { EventBus, SessionEventMessage } from '../pubsub.js';

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
 */
let readClock = 0;
const readsInFlight = new WeakMap<SqlClient, Map<string, { started: number; result: Promise<unknown> }>>();

function sharedRead<T>(sql: SqlClient, key: string, trigger: number, read: () => Promise<T>): Promise<T> {
  let reads = readsInFlight.get(sql);
  if (!reads) readsInFlight.set(sql, (reads = new Map()));
  const hit = reads.get(key);
  if (hit && hit.started > trigger) return hit.result as Promise<T>;
  const started = ++readClock;
  const result = read();
  reads.set(key, { started, result });
  const forget = () => {
    if (reads.get(key)?.result === result) reads.delete(key);
  };
  result.then(forget, forget);
  return result;
}

/** An async iterator whose `return()` takes effect at once, even while a `next()` is waiting. */
export interface SessionEventStream extends AsyncIterableIterator<SessionEventMessage> {
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
  /** The last sequence handed out (or known to be before the stream's start); null until read. */
  let last: number | null = afterSequence === null ? null : Math.max(0, afterSequence);
  /** Live events not yet looked at, in arrival order, with the read clock when each arrived. */
  const live: { event: SessionEventMessage; at: number }[] = [];
  /** Events ready to hand out, in order. */
  const ready: SessionEventMessage[] = [];
  /** Read the log up to this sequence (null: to its end) before anything else; undefined: no read due. */
  let logUpTo: number | null | undefined = afterSequence === null ? undefined : null;
  /** The bus said events may have been missed: compare with the session's counter. */
  let syncDue = false;
  /** When the stream learned it needs the pending counter read and log read (see `sharedRead`). */
  let syncTrigger = readClock;
  let logTrigger = readClock;
  const startTrigger = readClock;
  /** The live event whose gap was already filled from the log (so it is taken even if the log had less). */
  let gapFilledFor: SessionEventMessage | null = null;
  let ending = false;
  let done = false;
  let working = false;
  let waiting: { resolve: (r: IteratorResult<SessionEventMessage>) => void; reject: (e: unknown) => void } | null = null;

  const unsubscribe = bus.subscribe(sessionId, {
    // The bus tells every local stream in one loop; working in a microtask lets them all note the
    // same trigger before the first of them starts a read, so they can share it.
    event(event) {
      if (done) return;
      if (live.length >= MAX_LIVE_BACKLOG) {
        // A consumer this far behind reads from the log instead: its backlog is dropped (and its
        // memory with it) and the next sync reads what it missed, a page at a time as it pulls.
        live.length = 0;
        syncDue = true;
        syncTrigger = readClock;
      } else {
        live.push({ event, at: readClock });
      }
      queueMicrotask(work);
    },
    sync() {
      if (done) return;
      syncDue = true;
      syncTrigger = readClock;
      queueMicrotask(work);
    },
  });

  const finish = () => {
    if (done) return;
    done = true;
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
    live.length = 0;
    ready.length = 0;
    waiting?.resolve({ value: undefined, done: true });
    waiting = null;
  };
  const onAbort = () => finish();
  signal?.addEventListener('abort', onAbort);
  if (signal?.aborted) finish();

  const accept = (event: SessionEventMessage) => {
    last = Math.max(last ?? 0, event.sequence);
    ready.push(event);
    if (event.type === SESSION_DELETED) ending = true;
  };

  /** Advances the stream while a consumer waits; one run at a time. */
  async function work() {
    if (working) return;
    working = true;
    try {
      while (waiting && !done) {
        if (ready.length) {
          const event = ready.shift()!;
          const consumer = waiting;
          waiting = null;
          if (ending && ready.length === 0) {
            // Hand out the final event, then close: later `next()` calls see the end.
            consumer.resolve({ value: event, done: false });
            finish();
            return;
          }
          consumer.resolve({ value: event, done: false });
          continue;
        }
        if (ending) return finish();
        if (last === null) {
          const current = await sharedRead(sql, `sequence:${sessionId}`, startTrigger, () => currentEventSequence(sql, sessionId));
          if (done) return;
          last ??= current ?? 0;
          if (current === null) accept(sessionDeletedEvent(sessionId, last));
          continue;
        }
        if (syncDue) {
          syncDue = false;
          const trigger = syncTrigger;
          const current = await sharedRead(sql, `sequence:${sessionId}`, trigger, () => currentEventSequence(sql, sessionId));
          if (done) return;
          if (current === null) {
            accept(sessionDeletedEvent(sessionId, last));
          } else if (current > last) {
            logUpTo = null;
            logTrigger = Math.max(logTrigger, trigger);
          }
          continue;
        }
        if (logUpTo !== undefined) {
          const upTo = logUpTo;
          const after = last;
          const rows = await sharedRead(sql, `log:${sessionId}:${after}:${upTo}`, logTrigger, () =>
            readEventsAfter(sql, sessionId, after, upTo, REPLAY_PAGE),
          );
          if (done) return;
          for (const row of rows) if (row.sequence > last) accept(row);
          // Another page is due only when this one was full; otherwise the read is done, unless a
          // wider read was asked for while this one ran.
          if (rows.length < REPLAY_PAGE && logUpTo === upTo) logUpTo = undefined;
          continue;
        }
        const head = live[0];
        if (!head) return;
        const next = head.event;
        if (next.type !== SESSION_DELETED && next.sequence <= last) {
          live.shift();
          continue;
        }
        if (next.type !== SESSION_DELETED && next.sequence > last + 1 && gapFilledFor !== next) {
          gapFilledFor = next;
          logUpTo = next.sequence - 1;
          logTrigger = Math.max(logTrigger, head.at);
          continue;
        }
        live.shift();
        accept(next);
      }
    } catch (error) {
      const consumer = waiting;
      waiting = null;
      finish();
      consumer?.reject(error);
    } finally {
      working = false;
    }
  }

  const stream: SessionEventStream = {
    [Symbol.asyncIterator]() {
      return stream;
    },
    next() {
      if (done) return Promise.resolve({ value: undefined, done: true });
      if (waiting) return Promise.reject(new Error('sessionEventStream: next() called while another next() is pending'));
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        void work();
      });
    },
    return() {
      finish();
      return Promise.resolve({ value: undefined, done: true });
    },
  };
  return stream;
}

/**
 * The events of `stream` that `keep` accepts (turnEvents takes a session's turn events this way).
 * Unlike an `async function*` wrapper, `return()` reaches the stream at once, so a client that
 * leaves is released without waiting for the session's next event.
 */
export function filterEvents(stream: SessionEventStream, keep: (event: SessionEventMessage) => boolean): SessionEventStream {
  const filtered: SessionEventStream = {
    [Symbol.asyncIterator]: () => filtered,
    async next() {
      for (;;) {
        const step = await stream.next();
        if (step.done || keep(step.value)) return step;
      }
    },
    return: () => stream.return(),
  };
  return filtered;
}
