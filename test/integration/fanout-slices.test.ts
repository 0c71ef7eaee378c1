import type { Client } from 'graphql-ws';
import { afterAll, describe, expect, it } from 'vitest';
import { backend, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession } from '../helpers/documents.js';
import { type EventCollector, subscribeWs, wsClient } from '../helpers/subscriptions.js';

/**
 * One event for hundreds of sockets is written a slice at a time (src/pubsub/slicer.ts), with
 * requests handled in between: what each subscriber gets must stay whole and in order while it
 * is. How much a writer waits is measured by the bench (`fanout`, `one.1000.writer_p99_vs_alone`).
 */
const SUBSCRIBERS = 300;
const BURST = 12;

const SESSION_EVENTS = `
  subscription Events($id: ID!, $after: Int) {
    sessionEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
      ... on MessageAdded { message { text } }
    }
  }`;

type Ev = { __typename: string; sequence: number; message?: { text: string } };

let app: TestApp;
let url: string;
const clients: Client[] = [];

useTestApp(async (built) => {
  app = built;
  url = await app.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.dispose()));
});

async function newSession(title: string) {
  const data = await gqlOk(app, CreateSession, { input: { title } });
  return data.createSession.id;
}

async function eventSequence(id: string): Promise<number> {
  const data = await gqlOk<{ session: { eventSequence: number } }, { id: string }>(
    app,
    'query ($id: ID!) { session(id: $id) { eventSequence } }',
    { id },
  );
  return data.session.eventSequence;
}

const append = (sessionId: string, text: string) =>
  gqlOk(app, AppendMessages, { input: { sessionId, messages: [{ role: 'ASSISTANT', text }] } });

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe(`fan-out in slices (${backend.label})`, () => {
  it(`gives each of ${SUBSCRIBERS} WebSocket subscribers every event of a burst once and in order, and answers a mutation sent during the fan-out`, async () => {
    const id = await newSession('watched by many');
    const after = await eventSequence(id);
    const collectors: EventCollector<Ev>[] = [];
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const client = wsClient(url);
      clients.push(client);
      collectors.push(subscribeWs(client, SESSION_EVENTS, { id, after }, (data) => data.sessionEvents as Ev).collector);
    }
    // A first event every socket gets: from then on each subscription is live on the bus.
    await append(id, 'warm-up');
    const warm = await eventSequence(id);
    await Promise.all(collectors.map((c) => c.until((events) => events.some((e) => e.sequence === warm), 60_000, 'the warm-up')));

    const burst = Promise.all(range(1, BURST).map((i) => append(id, `burst ${i}`)));
    // Once the first socket has an event of the burst, its fan-out to the others is under way.
    await collectors[0].until((events) => events.some((e) => e.sequence > warm), 60_000, 'a burst event');
    const other = await newSession('written during the fan-out');
    const answered = await append(other, 'while hundreds of sockets are written');
    expect(answered.appendMessages.session).toEqual({ id: other, messageCount: 1 });
    await burst;

    const last = await eventSequence(id);
    expect(last).toBeGreaterThanOrEqual(warm + BURST);
    const expected = range(after + 1, last);
    await Promise.all(collectors.map((c) => c.until((events) => events.length >= expected.length, 60_000, `${expected.length} events`)));
    const texts = new Set<string>();
    for (const collector of collectors) {
      expect(collector.errors).toEqual([]);
      expect(collector.events.map((e) => e.sequence)).toEqual(expected);
      for (const e of collector.events) if (e.message) texts.add(e.message.text);
    }
    // Every burst message reached the sockets (the other session's message reached none).
    expect([...texts].sort()).toEqual(['warm-up', ...range(1, BURST).map((i) => `burst ${i}`)].sort());
  });
});
