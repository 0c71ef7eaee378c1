import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { Redis } from 'ioredis';
import { redact } from './config.js';
import type { Logger } from './logger.js';

/** A session event as it travels over pub/sub: plain JSON, dates as ISO strings. */
export interface SessionEventMessage {
  id: string;
  sessionId: string;
  sequence: number;
  type: string;
  turnId: string | null;
  messageId: string | null;
  payload: unknown;
  createdAt: string;
}

/** A live subscription to one session's events. */
export interface EventSubscription extends AsyncIterable<SessionEventMessage> {
  /** Resolves once the subscription is registered with the broker: events published after that arrive. */
  ready: Promise<void>;
  close(): void;
}

/**
 * The server's one channel family, `<prefix>session-events:<sessionId>`. Events are published after
 * the transaction that wrote them commits; they also live in the database, so a subscriber recovers
 * anything a lost publish dropped by replaying the log (see services/event-stream.ts).
 */
export interface EventBus {
  description: string;
  publish(event: SessionEventMessage): void;
  subscribe(sessionId: string): EventSubscription;
  ping(): Promise<void>;
  close(): Promise<void>;
}

interface BusTarget {
  addEventListener(type: string, listener: (event: Event) => void): void;
  removeEventListener(type: string, listener: (event: Event) => void): void;
  dispatchEvent(event: Event): boolean;
}

export function createEventBus(options: { redisUrl: string | null; prefix: string; logger: Logger }): EventBus {
  const channel = (sessionId: string) => `${options.prefix}session-events:${sessionId}`;

  if (!options.redisUrl) {
    const target = new EventTarget();
    return {
      description: 'in-memory pub/sub',
      publish: (event) => void target.dispatchEvent(new CustomEvent(channel(event.sessionId), { detail: event })),
      subscribe: (sessionId) => listen(target, channel(sessionId)),
      ping: async () => {},
      close: async () => {},
    };
  }

  const redisOptions = { maxRetriesPerRequest: null, connectionName: 'session-graph' };
  const publishClient = new Redis(options.redisUrl, redisOptions);
  const subscribeClient = new Redis(options.redisUrl, redisOptions);
  for (const client of [publishClient, subscribeClient]) {
    client.on('error', (error) => options.logger.warn('redis connection error', { error: error.message }));
  }
  // The Redis event target neither awaits nor catches `publish`: during an outage that would be an
  // unhandled rejection. Catch and log instead; subscribers recover the event from the log.
  const guardedPublisher = new Proxy(publishClient, {
    get(target, prop, receiver) {
      if (prop === 'publish') {
        return (name: string, message: string) =>
          target.publish(name, message).catch((error: Error) => {
            options.logger.error('redis publish failed; the event stays in the log for replay', { error: error.message, channel: name });
            return 0;
          });
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const target = createRedisEventTarget<CustomEvent>({ publishClient: guardedPublisher, subscribeClient }) as unknown as BusTarget;
  return {
    description: `Redis pub/sub at ${redact(options.redisUrl)}`,
    publish: (event) => void target.dispatchEvent(new CustomEvent(channel(event.sessionId), { detail: event })),
    // Commands on one connection are answered in order: when this PING returns, the SUBSCRIBE the
    // event target just sent has been processed, and later publishes will reach us.
    subscribe: (sessionId) => {
      const subscription = listen(target, channel(sessionId));
      subscription.ready = subscribeClient.ping().then(
        () => undefined,
        () => undefined,
      );
      return subscription;
    },
    async ping() {
      await publishClient.ping();
    },
    async close() {
      publishClient.disconnect();
      subscribeClient.disconnect();
    },
  };
}

/** An unbounded queue of one channel's events as an async iterable, listening from the moment it is made. */
function listen(target: BusTarget, name: string): EventSubscription {
  const queue: SessionEventMessage[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  const listener = (event: Event) => {
    queue.push((event as CustomEvent<SessionEventMessage>).detail);
    wake?.();
  };
  target.addEventListener(name, listener);
  const close = () => {
    if (closed) return;
    closed = true;
    target.removeEventListener(name, listener);
    wake?.();
  };
  return {
    ready: Promise.resolve(),
    close,
    async *[Symbol.asyncIterator]() {
      try {
        while (!closed) {
          if (queue.length === 0) {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
            continue;
          }
          yield queue.shift()!;
        }
      } finally {
        close();
      }
    },
  };
}
