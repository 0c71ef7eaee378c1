import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API_KEYS, backend, createTestApp, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession, UpdateMessage } from '../helpers/documents.js';
import { subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';

const SESSION_EVENTS = `
  subscription Events($id: ID!, $after: Int) {
    sessionEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
      at
      ... on MessageAdded { index message { id text } }
      ... on MessageUpdated { appendText finished }
      ... on SessionUpdated { fields }
    }
  }`;

type Ev = { __typename: string; sequence: number; index?: number; message?: { text: string }; appendText?: string | null };
const pick = (data: Record<string, unknown>) => data.sessionEvents as Ev;

let app: TestApp;
let url: string;

useTestApp(
  async (built) => {
    app = built;
    url = await app.listen(0, '127.0.0.1');
  },
  { apiKeys: [{ workspace: 'alpha', key: API_KEYS.alpha }] },
);

const auth = { apiKey: API_KEYS.alpha };

async function newSession() {
  const data = await gqlOk(app, CreateSession, { input: { title: 'live', messages: [{ role: 'USER', text: 'first' }] } }, auth);
  return data.createSession.id;
}

async function append(id: string, text: string) {
  await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text }] } }, auth);
}

describe(`HTTP and WebSocket transport (${backend.label})`, () => {
  it('answers health and readiness as JSON', async () => {
    const health = await fetch(url.replace('/graphql', '/healthz'));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(url.replace('/graphql', '/readyz'));
    expect(ready.status).toBe(200);
    // With read replicas (the suite on TEST_REPLICA_URLS) it names each one too.
    const { replicas, ...rest } = (await ready.json()) as { replicas?: { status: string }[] };
    expect(rest).toEqual({ status: 'ok', database: 'ok', pubsub: 'ok' });
    for (const replica of replicas ?? []) expect(replica.status).toBe('ok');
  });

  it('serves GraphiQL to a browser without loading anything from a CDN', async () => {
    const page = await fetch(url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toMatch(/graphiql/i);
    expect(html).not.toMatch(/unpkg\.com|cdn\.jsdelivr/);
  });

  it('answers queries over a real HTTP connection, with the key in the Authorization header', async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEYS.alpha}` },
      body: JSON.stringify({ query: '{ sessions(first: 1) { totalCount } }' }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { sessions: { totalCount: number } } };
    expect(body).toEqual({ data: { sessions: { totalCount: expect.any(Number) } } });
  });

  it('streams session events over graphql-ws and replays after a known sequence without gaps or repeats', async () => {
    const id = await newSession();
    const client = wsClient(url, { Authorization: `Bearer ${API_KEYS.alpha}` });
    const live = subscribeWs(client, SESSION_EVENTS, { id }, pick);
    // Everything after the initial MessageAdded (sequence 1) is replayed first, then live.
    const replaying = subscribeWs(client, SESSION_EVENTS, { id, after: 0 }, pick);
    await replaying.collector.until((e) => e.length >= 1, 10_000, 'the replayed first message');
    await append(id, 'second');
    await append(id, 'third');
    const events = await live.collector.until((e) => e.length >= 2, 10_000, 'two live events');
    expect(events.map((e) => [e.__typename, e.message?.text])).toEqual([
      ['MessageAdded', 'second'],
      ['MessageAdded', 'third'],
    ]);
    expect(events.map((e) => e.sequence)).toEqual([2, 3]);
    const all = await replaying.collector.until((e) => e.length >= 3);
    expect(all.map((e) => e.sequence)).toEqual([1, 2, 3]);
    live.unsubscribe();
    replaying.unsubscribe();

    // A client that saw sequence 2 reconnects: it gets 3 from the log, then the next live one, once each.
    const resumed = subscribeWs(client, SESSION_EVENTS, { id, after: 2 }, pick);
    await resumed.collector.until((e) => e.length >= 1);
    await append(id, 'fourth');
    const after = await resumed.collector.until((e) => e.length >= 2);
    expect(after.map((e) => [e.sequence, e.message?.text])).toEqual([
      [3, 'third'],
      [4, 'fourth'],
    ]);
    resumed.unsubscribe();
    await client.dispose();
  });

  it('refuses a WebSocket connection without a valid key at connection_init (4403 Forbidden)', async () => {
    const id = await newSession();
    for (const params of [{ Authorization: 'Bearer wrong-key-0123456789' }, undefined]) {
      const client = wsClient(url, params);
      const sub = subscribeWs(client, SESSION_EVENTS, { id }, pick);
      await expect(sub.collector.until(() => false, 5_000)).rejects.toThrow(/close 4403 Forbidden/);
      await client.dispose();
    }
  });

  it('closes a WebSocket that sends no connection_init within 3 s (4408), and keeps one that did', async () => {
    const open = async () => {
      const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        socket.addEventListener('close', (event) => resolve({ code: event.code, reason: event.reason })),
      );
      await new Promise((resolve, reject) => {
        socket.addEventListener('open', resolve);
        socket.addEventListener('error', reject);
      });
      return { socket, closed };
    };
    const silent = await open();
    const greeted = await open();
    const acked = new Promise((resolve) => greeted.socket.addEventListener('message', resolve));
    greeted.socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${API_KEYS.alpha}` } }));
    expect(JSON.parse(String(((await acked) as WebSocket.MessageEvent).data))).toEqual({ type: 'connection_ack' });
    expect(await silent.closed).toEqual({ code: 4408, reason: 'Connection initialisation timeout' });
    expect(greeted.socket.readyState).toBe(WebSocket.OPEN);
    greeted.socket.close();
    await greeted.closed;
  });

  it('closes a WebSocket whose frame is larger than the request cap (1009), and answers one within it', async () => {
    const open = async () => {
      const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
      const closed = new Promise<number>((resolve) => socket.addEventListener('close', (event) => resolve(event.code)));
      await new Promise((resolve, reject) => {
        socket.addEventListener('open', resolve);
        socket.addEventListener('error', reject);
      });
      return { socket, closed };
    };
    const init = (padding: number) =>
      JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${API_KEYS.alpha}`, pad: 'x'.repeat(padding) } });
    const big = await open();
    big.socket.send(init(backend.caps.requestBytes));
    expect(await big.closed).toBe(1009);
    const fits = await open();
    const acked = new Promise((resolve) => fits.socket.addEventListener('message', resolve));
    fits.socket.send(init(1024));
    expect(JSON.parse(String(((await acked) as WebSocket.MessageEvent).data))).toEqual({ type: 'connection_ack' });
    fits.socket.close();
    await fits.closed;
  });

  it("takes the key from the WebSocket upgrade request's Authorization header too", async () => {
    const id = await newSession();
    const client = wsClient(url, undefined, { authorization: `Bearer ${API_KEYS.alpha}` });
    const sub = subscribeWs(client, SESSION_EVENTS, { id, after: 0 }, pick);
    const events = await sub.collector.until((e) => e.length >= 1);
    expect(events[0]).toMatchObject({ __typename: 'MessageAdded', sequence: 1 });
    sub.unsubscribe();
    await client.dispose();
  });

  it('streams events over SSE too, streaming text deltas of a generating message', async () => {
    const id = await newSession();
    // afterSequence 1 (the session's first message): whatever happens from now on arrives, however
    // long the subscription takes to register.
    const sse = subscribeSse(app.yoga.fetch as never, SESSION_EVENTS, { id, after: 1 }, pick, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const appended = await gqlOk(
      app,
      AppendMessages,
      { input: { sessionId: id, messages: [{ role: 'ASSISTANT', text: '', generating: true }] } },
      auth,
    );
    const messageId = appended.appendMessages.messages[0].id;
    await sse.collector.until((e) => e.length >= 1);
    await gqlOk(app, UpdateMessage, { input: { messageId, appendText: 'Hel' } }, auth);
    await gqlOk(app, UpdateMessage, { input: { messageId, appendText: 'lo', generating: false } }, auth);
    const events = await sse.collector.until((e) => e.length >= 3);
    expect(events.map((e) => [e.__typename, e.appendText ?? null])).toEqual([
      ['MessageAdded', null],
      ['MessageUpdated', 'Hel'],
      ['MessageUpdated', 'lo'],
    ]);
    sse.unsubscribe();
  });
});

describe.runIf(backend.postgresUrl)(`two server instances (${backend.label})`, () => {
  let second: TestApp;
  let secondUrl: string;

  beforeAll(async () => {
    second = await createTestApp({ apiKeys: [{ workspace: 'alpha', key: API_KEYS.alpha }], shareWith: app });
    secondUrl = await second.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await second?.close();
  });

  it.runIf(backend.redisUrl)('delivers a mutation made on one instance to a subscriber on the other', async () => {
    const id = await newSession();
    const client = wsClient(secondUrl, { Authorization: `Bearer ${API_KEYS.alpha}` });
    const sub = subscribeWs(client, SESSION_EVENTS, { id, after: 1 }, pick);
    await append(id, 'from instance one');
    const events = await sub.collector.until((e) => e.length >= 1);
    expect(events[0]).toMatchObject({ __typename: 'MessageAdded', sequence: 2, message: { text: 'from instance one' } });
    sub.unsubscribe();
    await client.dispose();
  });

  it('keeps positions and event sequences gapless when both instances append at once', async () => {
    const id = await newSession();
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gqlOk(i % 2 ? second : app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: `m${i}` }] } }, auth),
      ),
    );
    const events = await app.runtime.db.prisma.sessionEvent.findMany({
      where: { sessionId: rawIdOf(id) },
      orderBy: { sequence: 'asc' },
    });
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
  });
});

describe(`graceful shutdown (${backend.label})`, () => {
  it('closes WebSocket clients and the database, and stops listening', async () => {
    const doomed = await createTestApp();
    const doomedUrl = await doomed.listen(0, '127.0.0.1');
    const created = await gqlOk(doomed, CreateSession, { input: { title: 'bye', messages: [{ role: 'USER', text: 'x' }] } });
    const client = wsClient(doomedUrl);
    const closed = new Promise<number>((resolve) => client.on('closed', (event) => resolve((event as { code: number }).code)));
    const sub = subscribeWs(client, SESSION_EVENTS, { id: created.createSession.id, after: 0 }, pick);
    await sub.collector.until((e) => e.length >= 1);
    await doomed.close();
    expect(await closed).toBe(1001);
    await expect(fetch(doomedUrl.replace('/graphql', '/healthz'))).rejects.toThrow();
    await client.dispose();
  });
});
