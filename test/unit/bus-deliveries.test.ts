import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { BusListener, EventBus, SessionEventMessage } from '../../src/pubsub/bus.js';
import { INLINE_LISTENERS, LISTENERS_PER_TICK } from '../../src/pubsub/listener-table.js';
import { createMemoryBus } from '../../src/pubsub/memory-bus.js';
import { createRedisBus } from '../../src/pubsub/redis-bus.js';

const event = (sessionId: string, sequence: number): SessionEventMessage => ({
  id: `${sessionId}-${sequence}`,
  sessionId,
  sequence,
  type: 'MESSAGE_ADDED',
  turnId: null,
  messageId: null,
  payload: {},
  createdAt: new Date().toISOString(),
});

/** A listener that records the sequences it hears. */
function recorder(): BusListener & { heard: number[] } {
  const heard: number[] = [];
  return { heard, event: (e) => void heard.push(e.sequence), sync: () => {} };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

const redisUrl = process.env.TEST_REDIS_URL || null;
const buses: [string, () => EventBus][] = [['in-memory bus', () => createMemoryBus()]];
// An instance's own events on the Redis bus: its listeners hear them from the publish, as in memory.
if (redisUrl) {
  buses.push(['Redis bus', () => createRedisBus(redisUrl, `bus-test:${randomBytes(4).toString('hex')}:`, createLogger('error'))]);
}

describe.each(buses)("%s: an instance's own events", (_, make) => {
  const open: EventBus[] = [];
  const createBus = () => {
    const bus = make();
    open.push(bus);
    return bus;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((bus) => bus.close()));
  });

  it('delivers inside the publish to a session with few listeners', () => {
    const bus = createBus();
    const listeners = Array.from({ length: INLINE_LISTENERS }, () => recorder());
    for (const listener of listeners) bus.subscribe('few', listener);
    bus.publish(event('few', 1));
    for (const listener of listeners) expect(listener.heard).toEqual([1]);
  });

  it('delivers to a session with more listeners only after the publishing callback, a slice per tick', async () => {
    const bus = createBus();
    const listeners = Array.from({ length: LISTENERS_PER_TICK + 10 }, () => recorder());
    for (const listener of listeners) bus.subscribe('many', listener);
    bus.publish(event('many', 1));
    expect(listeners.filter((l) => l.heard.length).length).toBe(0);
    await ticks(1);
    expect(listeners.filter((l) => l.heard.length).length).toBe(LISTENERS_PER_TICK);
    await ticks(2);
    for (const listener of listeners) expect(listener.heard).toEqual([1]);
  });

  it('never lets an inline delivery overtake one still queued', async () => {
    const bus = createBus();
    const listeners = Array.from({ length: INLINE_LISTENERS + 4 }, () => recorder());
    const leave = listeners.map((listener) => bus.subscribe('s', listener));
    bus.publish(event('s', 1));
    // Now few enough for an inline delivery, but event 1 is still queued for them.
    for (const stop of leave.slice(INLINE_LISTENERS)) stop();
    bus.publish(event('s', 2));
    expect(listeners[0].heard).toEqual([]);
    await ticks(3);
    for (const listener of listeners.slice(0, INLINE_LISTENERS)) expect(listener.heard).toEqual([1, 2]);
    for (const listener of listeners.slice(INLINE_LISTENERS)) expect(listener.heard).toEqual([1]);
  });
});
