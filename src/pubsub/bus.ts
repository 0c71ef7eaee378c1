/** The event bus's contract: who publishes, who listens, what a listener hears. */
import type { SessionEventMessage } from '../db/session-events.js';

export type { SessionEventMessage };

/**
 * What a local subscriber of one session hears. `event` gets each published event (the same
 * object for every local subscriber: never mutate it). `sync` says "events may have been missed
 * until now": the channel's SUBSCRIBE was just confirmed, or the connection came back after a
 * failure. The subscriber then reads the event log for anything after what it last saw.
 */
export interface BusListener {
  event(event: SessionEventMessage): void;
  sync(): void;
}

/**
 * What a bus tells the server's metrics: each event this instance publishes, and each event it
 * hands to its local listeners (once per event, with how many listeners heard it). Called
 * synchronously on the bus's hot path: an observer only counts.
 */
export interface BusObserver {
  published(event: SessionEventMessage): void;
  delivered(event: SessionEventMessage, listeners: number): void;
}

/** Counts for tests and diagnostics: channels this instance is subscribed to, and local listeners. */
export interface BusStats {
  channels: number;
  listeners: number;
}

/**
 * The server's one channel family, `<prefix>session-events:<sessionId>`. Redis is the doorbell,
 * the database the truth: events are written to the session's log in the transaction that makes
 * them and published after it commits, and a publish may be lost (Redis down, a SUBSCRIBE racing
 * it), so subscribers fill gaps from the log (`sessionEventStream` in services/event-stream.ts).
 * Because an instance hears its own events without Redis, two instances writing to one session
 * within a millisecond may each see the other's earlier event after its own later one: the
 * session's streams on that instance then read the gap from the log (one read, shared).
 *
 * One channel subscription per session per instance, shared by every local listener of that
 * session and released when the last one leaves. A published event is parsed once by each other
 * instance; the instance that publishes it hands it to its own listeners itself, in publish order,
 * without waiting for Redis (and while Redis is down).
 */
export interface EventBus {
  description: string;
  /**
   * Never throws and never waits: a publish that fails is logged (the event stays in the log).
   * This instance's listeners get the event in publish order, a slice of listeners per event-loop
   * tick (`Delivery`): at once for a session of up to `INLINE_LISTENERS` listeners, else once
   * the current I/O callback is done (the writer's response goes first). With Redis, after the
   * PUBLISH is handed to the connection.
   */
  publish(event: SessionEventMessage): void;
  /** Listens to one session's events until the returned function (or `unsubscribe`) is called. */
  subscribe(sessionId: string, listener: BusListener): () => void;
  /** Stops `listener` hearing the session's events (what the function `subscribe` returned does). */
  unsubscribe(sessionId: string, listener: BusListener): void;
  /** Resolves when pub/sub works; rejects at once when Redis is down (waiting to reconnect, or closed), and within `PING_TIMEOUT_MS` otherwise. */
  ping(): Promise<void>;
  stats(): BusStats;
  close(): Promise<void>;
}

/** How long a readiness ping waits for Redis before calling it degraded. */
export const PING_TIMEOUT_MS = 500;
