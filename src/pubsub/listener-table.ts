import type { BusListener, BusObserver, BusStats } from './bus.js';
import type { SessionEventMessage } from '../db/session-events.js';

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

/** Hands `event` to each listener (a copy of the set: a listener may leave while it hears), and tells `observer`. */
export function deliver(listeners: Iterable<BusListener>, event: SessionEventMessage, observer?: BusObserver) {
  const heard = [...listeners];
  for (const listener of heard) listener.event(event);
  if (heard.length) observer?.delivered(event, heard.length);
}
