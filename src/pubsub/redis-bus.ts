import { randomBytes } from 'node:crypto';
import { redact } from '../config.js';
import type { SessionEventMessage } from '../db/session-events.js';
import type { Logger } from '../logger.js';
import { PING_TIMEOUT_MS, type BusListener, type BusObserver, type EventBus } from './bus.js';
import { Delivery, deliverOwn, LISTENERS_PER_TICK, ListenerTable } from './listener-table.js';
import { connectRedis, describeTarget, type RedisTarget, whenReady } from './redis-connection.js';
import { Slicer } from './slicer.js';

/**
 * The bus across instances: Redis channels `<prefix>session-events:<sessionId>` (see `EventBus`).
 * On a Redis Cluster (`target` a list of seed nodes) the channels are sharded (`SSUBSCRIBE` /
 * `SPUBLISH`): a session's channel hashes to one slot, and its events travel only within the shard
 * that owns it, on one subscriber connection per primary that holds subscribed channels.
 */
export function createRedisBus(target: RedisTarget, prefix: string, logger: Logger, observer?: BusObserver): EventBus {
  const channelPrefix = `${prefix}session-events:`;
  const sharded = typeof target !== 'string';
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

  const publisher = connectRedis(target, { connectionName: 'session-graph-pub', maxRetriesPerRequest: 1 });
  // Our own (re)subscription logic decides what the connection listens to: no offline queue (a
  // command sent while down fails at once), no automatic resubscribe or resend behind our back.
  // On a cluster, ioredis keeps one subscriber per primary and moves the channels of a failed-over
  // primary to its successor (`subscribersReady`); we subscribe again there, to know when.
  const subscriber = connectRedis(
    target,
    {
      connectionName: 'session-graph-sub',
      enableOfflineQueue: false,
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: null,
    },
    { shardedSubscribers: true },
  );
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

  /** Each listener of the sessions reads the log for what it may have missed until now. */
  const confirmed = (sessionIds: string[]) => {
    for (const id of sessionIds) {
      // Released (or the connection lost) while the SUBSCRIBE was in flight: nothing to confirm.
      if (!table.has(id) || subscriber.status !== 'ready') continue;
      for (const listener of [...table.listeners(id)]) listener.sync();
    }
  };
  // The connection went down; the next 'ready' (or, on a cluster, `subscribersReady`) subscribes
  // every current session again.
  const subscribeFailed = (error: Error) => warnOnce('redis SUBSCRIBE failed', error);

  /** `again`: the channels may be listed already (a cluster's resubscription): listed once more, not twice. */
  const subscribeChannels = (sessionIds: string[], again = false) => {
    if (subscriber.status !== 'ready' || sessionIds.length === 0) return;
    if (!sharded) {
      subscriber.subscribe(...sessionIds.map((id) => channelPrefix + id)).then(() => confirmed(sessionIds), subscribeFailed);
      return;
    }
    // One slot per channel: one SSUBSCRIBE each, sent to the primary that owns it.
    for (const id of sessionIds) {
      const channel = channelPrefix + id;
      if (again) subscriber.sunsubscribe(channel).catch(() => {});
      subscriber.ssubscribe(channel).then(() => confirmed([id]), subscribeFailed);
    }
  };

  subscriber.on('ready', () => {
    // A new connection listens to nothing: subscribe every session that has local listeners, and
    // once confirmed, each listener reads the log for what was published while we were away.
    subscribeChannels(table.sessions(), sharded);
  });
  // A cluster's subscribers were made again (a primary failed over, a slot moved, a subscriber's
  // connection was lost): the channels they hold may have missed messages meanwhile.
  subscriber.on('subscribersReady', () => subscribeChannels(table.sessions(), true));

  const onMessage = (channelBytes: Buffer, message: Buffer) => {
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
  };
  subscriber.on(sharded ? 'smessageBuffer' : 'messageBuffer', onMessage);

  const unsubscribe = (sessionId: string, listener: BusListener) => {
    if (!table.remove(sessionId, listener)) return;
    if (subscriber.status === 'ready') {
      const channel = channelPrefix + sessionId;
      (sharded ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel)).catch((error: Error) =>
        warnOnce('redis UNSUBSCRIBE failed', error),
      );
    }
  };

  return {
    description: sharded ? `sharded pub/sub on ${describeTarget(target, redact)}` : `Redis pub/sub at ${redact(target)}`,
    publish(event) {
      observer?.published(event);
      // To Redis first: other instances' listeners do not wait for this one's.
      // While Redis is down after having been up, drop the publish at once instead of queueing it
      // without bound; other instances' subscribers get the event from the log when their
      // connection comes back.
      if (publisher.status !== 'ready' && publisherWasReady) {
        warnOnce('redis is down; events are kept in the log for replay', new Error(publisher.status));
      } else {
        const channel = channelPrefix + event.sessionId;
        const message = originText + JSON.stringify(event).slice(1);
        (sharded ? publisher.spublish(channel, message) : publisher.publish(channel, message)).catch((error: Error) => {
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
