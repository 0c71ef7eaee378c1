import type { BusListener, BusObserver, BusStats } from './bus.js';
import type { SessionEventMessage } from '../db/session-events.js';
import type { Slicer, SlicedWork } from './slicer.js';

/** Local listeners per session; the one place both buses keep who hears what. */
export class ListenerTable {
  private readonly bySession = new Map<string, Set<BusListener>>();

  /** Adds a listener; true when it is the session's first (the channel must be subscribed). */
  add(sessionId: string, listener: BusListener): boolean {
    const set = this.bySession.get(sessionId);
    if (set) {
      set.add(listener);
      return false;
    }
    this.bySession.set(sessionId, new Set([listener]));
    return true;
  }

  /** Removes a listener; true when it was the session's last (the channel can be released). */
  remove(sessionId: string, listener: BusListener): boolean {
    const set = this.bySession.get(sessionId);
    if (!set?.delete(listener) || set.size > 0) return false;
    this.bySession.delete(sessionId);
    return true;
  }

  has(sessionId: string): boolean {
    return this.bySession.has(sessionId);
  }

  listeners(sessionId: string): Iterable<BusListener> {
    return this.bySession.get(sessionId) ?? [];
  }

  sessions(): string[] {
    return [...this.bySession.keys()];
  }

  stats(): BusStats {
    let listeners = 0;
    for (const set of this.bySession.values()) listeners += set.size;
    return { channels: this.bySession.size, listeners };
  }
}

/**
 * Listener calls per event-loop tick: a session's 1,000 local subscribers hear an event in
 * slices of this many, with I/O (a writer's next request) handled in between.
 */
export const LISTENERS_PER_TICK = 128;

/**
 * One event handed to each of a session's listeners (a copy of the set: a listener may leave while
 * it hears), a slice at a time on the bus's `Slicer`. Deliveries run in publish order and each
 * one whole before the next, so every listener hears a session's events in the order they came.
 */
export class Delivery implements SlicedWork {
  private readonly listeners: BusListener[];
  private next = 0;

  constructor(
    listeners: Iterable<BusListener>,
    private readonly event: SessionEventMessage,
    private readonly observer?: BusObserver,
  ) {
    this.listeners = [...listeners];
  }

  runSlice(budget: number): number {
    const { listeners, event } = this;
    const end = Math.min(listeners.length, this.next + budget);
    const start = this.next;
    while (this.next < end) listeners[this.next++].event(event);
    // The observer hears of the event once every listener has it.
    if (end > start && end === listeners.length) this.observer?.delivered(event, listeners.length);
    return end - start;
  }

  unfinished(): boolean {
    return this.next < this.listeners.length;
  }

  /** How many listeners the event goes to. */
  get size(): number {
    return this.listeners.length;
  }
}

/**
 * Listeners of a session that hear an event their own instance publishes inside the publish, before
 * the writer's response goes out: the writer waits for at most this many deliveries, however many
 * watch. A session with more hears each event once the current I/O callback is done, a slice at a time.
 */
export const INLINE_LISTENERS = 16;

/**
 * Hands an event this instance published to its own listeners: at once for a session of up to
 * `INLINE_LISTENERS` (unless a delivery is still queued: it never overtakes one), else once the
 * current I/O callback is done.
 */
export function deliverOwn(deliveries: Slicer, delivery: Delivery): void {
  if (delivery.size <= INLINE_LISTENERS) deliveries.run(delivery);
  else deliveries.later(delivery);
}
