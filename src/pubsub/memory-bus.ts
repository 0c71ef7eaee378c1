import type { BusObserver, EventBus } from './bus.js';
import { deliver, ListenerTable } from './listener-table.js';

/** The bus of a single instance: a publish reaches this process's listeners at once. */
export function createMemoryBus(observer?: BusObserver): EventBus {
  const table = new ListenerTable();
  return {
    description: 'in-memory pub/sub',
    publish(event) {
      observer?.published(event);
      deliver(table.listeners(event.sessionId), event, observer);
    },
    subscribe(sessionId, listener) {
      table.add(sessionId, listener);
      // Nothing can be in flight in process: the listener hears every publish from now on.
      return () => void table.remove(sessionId, listener);
    },
    unsubscribe: (sessionId, listener) => void table.remove(sessionId, listener),
    ping: async () => {},
    stats: () => table.stats(),
    close: async () => {},
  };
}
