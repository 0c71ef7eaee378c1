import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger.js';
import { connectRedis } from '../pubsub/redis-connection.js';

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Counts requests per identity (an API key's hash, or an IP address) in fixed windows. */
export interface RateLimiter {
  take(identity: string): Promise<RateDecision>;
  close(): Promise<void>;
}

export interface RateLimiterOptions {
  /** Requests allowed per identity per window; 0 turns limiting off. */
  requests: number;
  windowMs: number;
  /** With Redis, every instance counts in the same keys, so the limit holds across instances. */
  redisUrl: string | null;
  /** A Redis Cluster's seed nodes (win over `redisUrl`): each identity's keys in one slot (a hash tag). */
  redisClusterNodes?: string[] | null;
  prefix: string;
  logger: Logger;
}

/** How long a count may take before the request is let through. */
const COMMAND_TIMEOUT_MS = 250;

/**
 * `promise`, or a rejection after `ms`: a cluster retries a command whose primary is failing over
 * (redirections, `CLUSTERDOWN`) for longer than one node's `commandTimeout`.
 */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Identities counted in process (without Redis) at once. */
const LOCAL_IDENTITIES = 100_000;

// INCR and the window's expiry in one step, so a key never outlives its window.
const TAKE_SCRIPT = `local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n`;

/**
 * Fixed-window limiter: at most `requests` per `windowMs` per identity. On Redis the counters are
 * shared by every instance; when Redis does not answer within 250 ms the request is let through
 * (and logged, once per window): an outage of the limiter must not become an outage of the API.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { requests, windowMs } = options;
  if (requests <= 0) return { take: async () => ({ allowed: true }), close: async () => {} };

  const windowOf = (now: number) => Math.floor(now / windowMs);
  const retryAfter = (now: number) => Math.max(1, Math.ceil(((windowOf(now) + 1) * windowMs - now) / 1000));

  const target = options.redisClusterNodes ?? options.redisUrl;
  if (!target) {
    // Rule: an identity's count of the current window; a count of a past window is replaced at the
    // identity's next request and expires with its window. At most LOCAL_IDENTITIES are kept: the
    // one forgotten when full is the identity heard from least recently, the least likely to be
    // over its limit.
    const counts = new LRUCache<string, { window: number; count: number }>({ max: LOCAL_IDENTITIES, ttl: windowMs });
    return {
      async take(identity) {
        const now = Date.now();
        const window = windowOf(now);
        let entry = counts.get(identity);
        if (!entry || entry.window !== window) {
          entry = { window, count: 0 };
          counts.set(identity, entry);
        }
        entry.count++;
        return entry.count <= requests ? { allowed: true } : { allowed: false, retryAfterSeconds: retryAfter(now) };
      },
      async close() {},
    };
  }

  const redis = connectRedis(target, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
  });
  let warnedWindow = -1;
  redis.on('error', () => {
    // Reported through the failed `take` below; ioredis reconnects by itself.
  });
  // On a cluster the identity is a hash tag: every window of an identity in one slot, on one primary.
  const keyOf = options.redisClusterNodes
    ? (identity: string, window: number) => `${options.prefix}rate:{${identity}}:${window}`
    : (identity: string, window: number) => `${options.prefix}rate:${identity}:${window}`;
  const ready = redis.connect().catch((error) => options.logger.warn('rate limiter: Redis unreachable at start', { error }));
  return {
    async take(identity) {
      await ready;
      const now = Date.now();
      const window = windowOf(now);
      try {
        const counted = redis.eval(TAKE_SCRIPT, 1, keyOf(identity, window), windowMs);
        const count = Number(await (options.redisClusterNodes ? within(COMMAND_TIMEOUT_MS, counted) : counted));
        return count <= requests ? { allowed: true } : { allowed: false, retryAfterSeconds: retryAfter(now) };
      } catch (error) {
        if (warnedWindow !== window) {
          warnedWindow = window;
          options.logger.warn('rate limiter: Redis failed, letting requests through', { error });
        }
        return { allowed: true };
      }
    },
    async close() {
      await ready;
      redis.disconnect();
    },
  };
}
