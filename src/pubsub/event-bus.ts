import type { Logger } from '../logger.js';
import type { BusObserver, EventBus } from './bus.js';
import { createMemoryBus } from './memory-bus.js';
import { createRedisBus } from './redis-bus.js';

/**
 * The Redis bus when a Redis URL (or a Redis Cluster's seed nodes, which win) is configured, else the
 * in-memory bus of a single instance.
 */
export function createEventBus(options: {
  redisUrl: string | null;
  redisClusterNodes?: string[] | null;
  prefix: string;
  logger: Logger;
  observer?: BusObserver;
}): EventBus {
  const target = options.redisClusterNodes ?? options.redisUrl;
  return target ? createRedisBus(target, options.prefix, options.logger, options.observer) : createMemoryBus(options.observer);
}
