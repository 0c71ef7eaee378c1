import { describe, expect, it } from 'vitest';
import { firstKeptSequence } from '../../src/db/stores/events.js';
import { backend, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession } from '../helpers/documents.js';
import { type EventCollector, subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';

const EVENTS = `subscription RetainedEvents($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSequence: $after) { sequence __typename } }`;
const TURN_EVENTS = `subscription RetainedTurnEvents($id: ID!, $after: Int) { turnEvents(sessionId: $id, afterSequence: $after) { sequence } }`;
const SEQUENCE = `query EventSequence($id: ID!) { node(id: $id) { ... on Session { eventSequence } } }`;
const pick = (data: Record<string, unknown>) => (data.sessionEvents ?? data.turnEvents) as { sequence: number };
const RETENTION_MS = 1_000;

async function newSession(app: TestApp, messages: number) {
  const texts = Array.from({ length: messages }, (_, i) => ({ role: 'USER' as const, text: `m${i}` }));
  return (await gqlOk(app, CreateSession, { input: { title: 'retained', messages: texts } })).createSession.id;
}

const append = (app: TestApp, id: string, text: string) =>
  gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text }] } });

/** The first error of a subscription that must fail at once, without an event before it. */
async function refusal(collector: EventCollector<{ sequence: number }>) {
  await expect(collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow();
  expect(collector.events).toEqual([]);
  return JSON.stringify(collector.errors);
}

describe(`EVENT_RETENTION_MS (${backend.label})`, () => {
  let app: TestApp;
  useTestApp(
    (built) => {
      app = built;
    },
    { config: { eventRetentionMs: RETENTION_MS } },
  );

  it('two seconds after its events, a replay from 0 gets EVENTS_EXPIRED over WebSocket and SSE; subscribing from Session.eventSequence then misses nothing', async () => {
    const id = await newSession(app, 1);
    await append(app, id, 'second');
    const written = Date.now();
    // The sweep runs every quarter of the retention by itself; on a loaded machine give it time.
    const deadline = written + 20_000;
    while ((await firstKeptSequence(app.runtime.db.sql, rawIdOf(id))) !== 3) {
      if (Date.now() > deadline) throw new Error('the sweep did not delete the old events');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, written + 2_000 - Date.now())));

    const client = wsClient(app.url);
    try {
      for (const document of [EVENTS, TURN_EVENTS]) {
        const ws = await refusal(subscribeWs(client, document, { id, after: 0 }, pick).collector);
        expect(ws).toContain('EVENTS_EXPIRED');
        expect(ws).toMatch(/Re-read the session, then subscribe with afterSequence set to its current sequence/);
        const sse = await refusal(subscribeSse(app.yoga.fetch as never, document, { id, after: 0 }, pick).collector);
        expect(sse).toContain('EVENTS_EXPIRED');
      }

      const read = (await gqlOk(app, SEQUENCE, { id })) as { node: { eventSequence: number } };
      const current = read.node.eventSequence;
      expect(current).toBe(2);
      const resumed = subscribeWs(client, EVENTS, { id, after: current }, pick);
      // Replay from the current sequence finds nothing to replay, and is not refused.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await append(app, id, 'third');
      await append(app, id, 'fourth');
      const events = await resumed.collector.until((e) => e.length >= 2, 10_000, 'the new events');
      expect(events.map((e) => e.sequence)).toEqual([3, 4]);
      resumed.unsubscribe();
    } finally {
      await client.dispose();
    }
  });

  it('sweeps whole prefixes in batches, concurrently without harm; what is kept replays gaplessly and older replays are refused', async () => {
    const retention = app.runtime.retention!;
    // From here the test sweeps by hand, at chosen times.
    await retention.stop();
    const id = await newSession(app, 1);
    await append(app, id, 'old');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cut = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const text of ['new 1', 'new 2', 'new 3']) await append(app, id, text);
    // Two instances' sweeps at once: both finish, the old events are gone once, the new ones stay.
    await Promise.all([retention.sweep(cut + RETENTION_MS), retention.sweep(cut + RETENTION_MS)]);
    expect(await firstKeptSequence(app.runtime.db.sql, rawIdOf(id))).toBe(3);

    const kept = subscribeSse(app.yoga.fetch as never, EVENTS, { id, after: 2 }, pick);
    const replayed = await kept.collector.until((e) => e.length >= 3, 10_000, 'the kept events');
    expect(replayed.map((e) => e.sequence)).toEqual([3, 4, 5]);
    kept.unsubscribe();
    expect(await refusal(subscribeSse(app.yoga.fetch as never, EVENTS, { id, after: 1 }, pick).collector)).toContain('EVENTS_EXPIRED');
  });
});
