import type { BusObserver, EventBus } from './bus.js';
import { Delivery, deliverOwn, LISTENERS_PER_TICK, ListenerTable } from './listener-table.js';
import { Slicer } from './slicer.js';

/**
 * The bus of a single instance. A publish reaches a session with up to `INLINE_LISTENERS` listeners
 * at once, and one with more once the current I/O callback is done (the writer's response goes
 * first); never before a delivery still queued, so each listener hears events in publish order.
 */
export function createMemoryBus(observer?: BusObserver): EventBus {
  const table = new ListenerTable();
  const deliveries = new Slicer(LISTENERS_PER_TICK);
  return {
    description: 'in-memory pub/sub',
    publish(event) {
      observer?.published(event);
      if (!table.has(event.sessionId)) return;
      deliverOwn(deliveries, new Delivery(table.listeners(event.sessionId), event, observer));
    },
    subscribe(sessionId, listener) {
      table.add(sessionId, listener);
      // Nothing can be in flight in process: the listener hears every publish from now on (a
      // publish before it, still being delivered, is in the log the stream starts from).
      return () => void table.remove(sessionId, listener);
    },
    unsubscribe: (sessionId, listener) => void table.remove(sessionId, listener),
    ping: async () => {},
    stats: () => table.stats(),
    close: async () => deliveries.clear(),
  };
}
