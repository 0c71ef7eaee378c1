import type { Logger } from '../logger.js';
import type { BusObserver, EventBus } from './bus.js';
import { createMemoryBus } from './memory-bus.js';
import { createRedisBus } from './redis-bus.js';

/** The Redis bus when a Redis URL is configured, else the in-memory bus of a single instance. */
export function createEventBus(options: { redisUrl: string | null; prefix: string; logger: Logger; observer?: BusObserver }): EventBus {
  return options.redisUrl
    ? createRedisBus(options.redisUrl, options.prefix, options.logger, options.observer)
    : createMemoryBus(options.observer);
}
