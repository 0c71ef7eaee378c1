import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { redact } from '../config.js';
import type { MessageSnapshot } from '../db/stores/messages.js';
import type { Logger } from '../logger.js';

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
  /**
   * The event's message (`messageId`) as the write left it, carried by live events only (never
   * stored in the log) and only when small (db/stores/messages.ts `messageSnapshot`): every
   * instance answers `message` from it instead of reading the row once per event.
   */
  message?: MessageSnapshot;
  /** The publishing instance's mark, on an event that came through Redis (see `createRedisBus`); nothing reads it. */
  origin?: string;
}

/**
 * What a local subscriber of one session hears. `event` gets each published event (the same
 * object for every local subscriber: never mutate it). `sync` says "events may have been missed
 * until now": the channel's SUBSCRIBE was just confirmed, or the connection came back after a
 * failure. The subscriber then reads the event log for anything after what it last saw.
 */
export interface BusListener {
  event(event: SessionEventMessage): void;
  sync(): void;
}

/** Counts for tests and diagnostics: channels this instance is subscribed to, and local listeners. */
export interface BusStats {
  channels: number;
  listeners: number;
}

/**
 * The server's one channel family, `<prefix>session-events:<sessionId>`. Redis is the doorbell,
 * the database the truth: events are written to the session's log in the transaction that makes
 * them and published after it commits, and a publish may be lost (Redis down, a SUBSCRIBE racing
 * it), so subscribers fill gaps from the log (services/event-log.ts `sessionEventStream`).
 * Because an instance hears its own events without Redis, two instances writing to one session
 * within a millisecond may each see the other's earlier event after its own later one: the
 * session's streams on that instance then read the gap from the log (one read, shared).
 *
 * One channel subscription per session per instance, shared by every local listener of that
 * session and released when the last one leaves. A published event is parsed once by each other
 * instance; the instance that publishes it hands it to its own listeners itself, in publish order,
 * without waiting for Redis (and while Redis is down).
 */
export interface EventBus {
  description: string;
  /**
   * Never throws and never waits: a publish that fails is logged (the event stays in the log).
   * This instance's listeners get the event once the current I/O callback is done (Redis bus) or
   * at once (in-memory bus).
   */
  publish(event: SessionEventMessage): void;
  /** Listens to one session's events until the returned function (or `unsubscribe`) is called. */
  subscribe(sessionId: string, listener: BusListener): () => void;
  /** Stops `listener` hearing the session's events (what the function `subscribe` returned does). */
  unsubscribe(sessionId: string, listener: BusListener): void;
  /** Resolves when pub/sub works; rejects at once when Redis is down (waiting to reconnect, or closed), and within `PING_TIMEOUT_MS` otherwise. */
  ping(): Promise<void>;
  stats(): BusStats;
  close(): Promise<void>;
}

/** How long a readiness ping waits for Redis before calling it degraded. */
export const PING_TIMEOUT_MS = 500;

export function createEventBus(options: { redisUrl: string | null; prefix: string; logger: Logger }): EventBus {
  return options.redisUrl ? createRedisBus(options.redisUrl, options.prefix, options.logger) : createMemoryBus();
}

/** Local listeners per session; the one place both buses keep who hears what. */
class ListenerTable {
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

function deliver(listeners: Iterable<BusListener>, event: SessionEventMessage) {
  for (const listener of [...listeners]) listener.event(event);
}

function createMemoryBus(): EventBus {
  const table = new ListenerTable();
  return {
    description: 'in-memory pub/sub',
    publish: (event) => deliver(table.listeners(event.sessionId), event),
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

function createRedisBus(redisUrl: string, prefix: string, logger: Logger): EventBus {
  const channelPrefix = `${prefix}session-events:`;
  const table = new ListenerTable();
  // An instance's own events reach its own listeners straight from `publish`, not through Redis:
  // one round trip sooner (on the bench's 100 sessions × 10 subscribers over two instances, the
  // server's delivery p99 went from 6.8 to 6.1 ms), and on through a Redis outage. Every message
  // it publishes starts with its origin, and the copy Redis sends back to it is skipped as bytes,
  // neither decoded nor parsed.
  const originText = `{"origin":"${randomBytes(8).toString('hex')}",`;
  const origin = Buffer.from(originText);
  /** Own events waiting for their local delivery, which runs once the current I/O callback is done (a writer's response goes first). */
  const local: SessionEventMessage[] = [];
  const deliverLocal = () => {
    const events = local.splice(0);
    if (closed) return;
    for (const event of events) deliver(table.listeners(event.sessionId), event);
  };

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
    deliver(table.listeners(sessionId), event);
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
      if (table.has(event.sessionId) && !closed) {
        if (local.length === 0) setImmediate(deliverLocal);
        local.push(event);
      }
      // While Redis is down after having been up, drop the publish at once instead of queueing it
      // without bound; other instances' subscribers get the event from the log when their
      // connection comes back.
      if (publisher.status !== 'ready' && publisherWasReady) {
        warnOnce('redis is down; events are kept in the log for replay', new Error(publisher.status));
        return;
      }
      publisher.publish(channelPrefix + event.sessionId, originText + JSON.stringify(event).slice(1)).catch((error: Error) => {
        warnOnce('redis publish failed; the event stays in the log for replay', error);
      });
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
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}

/** Resolves when the connection is ready; rejects at once unless it is being made right now. */
function whenReady(client: RedisClient): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status !== 'connecting' && client.status !== 'connect') return Promise.reject(new Error(`redis ${client.status}`));
  return new Promise((resolve, reject) => {
    const onReady = () => {
      client.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      client.off('ready', onReady);
      reject(new Error('redis connection closed'));
    };
    client.once('ready', onReady);
    client.once('close', onClose);
  });
}

/** ioredis is loaded only when a Redis URL is configured (start-up time and memory without Redis). */
export function loadRedis(): typeof RedisClient {
  return (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis;
}
