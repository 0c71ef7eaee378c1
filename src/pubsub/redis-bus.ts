import { randomBytes } from 'node:crypto';
import { redact } from '../config.js';
import type { SessionEventMessage } from '../db/session-events.js';
import type { Logger } from '../logger.js';
import { PING_TIMEOUT_MS, type BusListener, type BusObserver, type EventBus } from './bus.js';
import { Delivery, deliverOwn, LISTENERS_PER_TICK, ListenerTable } from './listener-table.js';
import { loadRedis, whenReady } from './redis-connection.js';
import { Slicer } from './slicer.js';

/** The bus across instances: Redis channels `<prefix>session-events:<sessionId>` (see `EventBus`). */
export function createRedisBus(redisUrl: string, prefix: string, logger: Logger, observer?: BusObserver): EventBus {
  const channelPrefix = `${prefix}session-events:`;
  const table = new ListenerTable();
  // An instance's own events reach its own listeners straight from `publish`, not through Redis:
  // one round trip sooner, and on through a Redis outage. Every message
  // it publishes starts with its origin, and the copy Redis sends back to it is skipped as bytes,
  // neither decoded nor parsed.
  const originText = `{"origin":"${randomBytes(8).toString('hex')}",`;
  const origin = Buffer.from(originText);
  /**
   * Local deliveries, own and other instances' events in the order they came, a slice at a time
   * (an own event's as `deliverOwn` says).
   */
  const deliveries = new Slicer(LISTENERS_PER_TICK);

  const publisher = new (loadRedis())(redisUrl, { connectionName: 'session-graph-pub', maxRetriesPerRequest: 1 });
  // Our own (re)subscription logic decides what the connection listens to: no offline queue (a
  // command sent while down fails at once), no automatic resubscribe or resend behind our back.
  const subscriber = new (loadRedis())(redisUrl, {
    connectionName: 'session-graph-sub',
    enableOfflineQueue: false,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: null,
  });
  let publisherWasReady = false;
  let closed = false;
  const warned = new Map<string, number>();
  /** One log line per kind of failure every 5 s: an outage must not flood the log. */
  const warnOnce = (what: string, error: Error) => {
    const now = Date.now();
    if ((warned.get(what) ?? 0) > now - 5_000) return;
    warned.set(what, now);
    logger.warn(what, { error: error.message });
  };
  publisher.on('error', (error) => warnOnce('redis publish connection error', error));
  subscriber.on('error', (error) => warnOnce('redis subscribe connection error', error));
  publisher.on('ready', () => (publisherWasReady = true));

  const subscribeChannels = (sessionIds: string[]) => {
    if (subscriber.status !== 'ready' || sessionIds.length === 0) return;
    subscriber.subscribe(...sessionIds.map((id) => channelPrefix + id)).then(
      () => {
        for (const id of sessionIds) {
          // Released (or the connection lost) while the SUBSCRIBE was in flight: nothing to confirm.
          if (!table.has(id) || subscriber.status !== 'ready') continue;
          for (const listener of [...table.listeners(id)]) listener.sync();
        }
      },
      // The connection went down; the next 'ready' subscribes every current session again.
      (error: Error) => warnOnce('redis SUBSCRIBE failed', error),
    );
  };

  subscriber.on('ready', () => {
    // A new connection listens to nothing: subscribe every session that has local listeners, and
    // once confirmed, each listener reads the log for what was published while we were away.
    subscribeChannels(table.sessions());
  });

  subscriber.on('messageBuffer', (channelBytes: Buffer, message: Buffer) => {
    if (message.length >= origin.length && message.compare(origin, 0, origin.length, 0, origin.length) === 0) return;
    const channel = channelBytes.toString();
    if (!channel.startsWith(channelPrefix)) return;
    const sessionId = channel.slice(channelPrefix.length);
    let event: SessionEventMessage;
    try {
      event = JSON.parse(message.toString()) as SessionEventMessage;
    } catch (error) {
      warnOnce('unreadable message on an event channel', error as Error);
      return;
    }
    if (table.has(sessionId)) deliveries.run(new Delivery(table.listeners(sessionId), event, observer));
  });

  const unsubscribe = (sessionId: string, listener: BusListener) => {
    if (!table.remove(sessionId, listener)) return;
    if (subscriber.status === 'ready') {
      subscriber.unsubscribe(channelPrefix + sessionId).catch((error: Error) => warnOnce('redis UNSUBSCRIBE failed', error));
    }
  };

  return {
    description: `Redis pub/sub at ${redact(redisUrl)}`,
    publish(event) {
      observer?.published(event);
      // To Redis first: other instances' listeners do not wait for this one's.
      // While Redis is down after having been up, drop the publish at once instead of queueing it
      // without bound; other instances' subscribers get the event from the log when their
      // connection comes back.
      if (publisher.status !== 'ready' && publisherWasReady) {
        warnOnce('redis is down; events are kept in the log for replay', new Error(publisher.status));
      } else {
        publisher.publish(channelPrefix + event.sessionId, originText + JSON.stringify(event).slice(1)).catch((error: Error) => {
          warnOnce('redis publish failed; the event stays in the log for replay', error);
        });
      }
      if (table.has(event.sessionId) && !closed) deliverOwn(deliveries, new Delivery(table.listeners(event.sessionId), event, observer));
    },
    subscribe(sessionId, listener) {
      // A listener joining a channel that is already subscribed hears every publish from now on;
      // one joining a SUBSCRIBE in flight gets `sync` with the others when it is confirmed.
      if (table.add(sessionId, listener)) subscribeChannels([sessionId]);
      return () => unsubscribe(sessionId, listener);
    },
    unsubscribe,
    async ping() {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis did not answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
      });
      try {
        // A connection being made (at start, or a retry under way) gets the timeout to finish;
        // one waiting to retry or closed is down now: say so at once.
        await Promise.race([Promise.all([whenReady(publisher), whenReady(subscriber)]), deadline]);
        await Promise.race([publisher.ping(), deadline]);
      } finally {
        clearTimeout(timer);
      }
    },
    stats: () => table.stats(),
    async close() {
      if (closed) return;
      closed = true;
      deliveries.clear();
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
