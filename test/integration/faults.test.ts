import { request as httpRequest } from 'node:http';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { backend, createTestApp, dropTestDatabases, gql, gqlOk, testConfig, testDeviations, type TestApp } from '../helpers/app.js';
import {
  postgresBin,
  redisServerAvailable,
  startPrivatePostgres,
  startPrivateRedis,
  type PrivatePostgres,
  type PrivateRedis,
} from '../helpers/private-servers.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await dropTestDatabases();
});

const CREATE = 'mutation ($title: String!) { createSession(input: {title: $title, messages: [{role: USER, text: "hi"}]}) { id } }';
const READ = 'query ($id: ID!) { session(id: $id) { title messageCount } }';
const EVENTS = 'subscription ($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSequence: $after) { sequence } }';

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const readyz = async (app: App) => {
  const response = await app.yoga.fetch('http://localhost/readyz');
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe.runIf(postgresBin)('a PostgreSQL outage (a private server, stopped and started)', () => {
  let pg: PrivatePostgres;
  let app: App;

  it('answers SERVICE_UNAVAILABLE (retryable) while the database is down, logs it, and recovers', async () => {
    pg = await startPrivatePostgres();
    cleanups.push(() => pg.destroy());
    // Keys optional: requests without one reach the resolvers (the key check's own outage path is the WebSocket case below).
    app = await buildApp(testConfig({ databaseUrl: pg.url, redisUrl: null, logLevel: 'warn', authRequired: false }), {
      deviations: testDeviations,
    });
    cleanups.push(() => app.close());
    const url = await app.listen(0, '127.0.0.1');
    const { createSession } = await gqlOk<{ createSession: { id: string } }, { title: string }>(app, CREATE, { title: 'before' });

    await pg.stop();
    const lines: string[] = [];
    const logged = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => lines.push(String(chunk)) > 0);
    try {
      for (const [document, variables] of [
        [READ, { id: createSession.id }],
        [CREATE, { title: 'during' }],
      ] as const) {
        const result = await gql(app, document, variables);
        expect(result.errors?.[0]?.extensions, JSON.stringify(result)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      }
      // A key that cannot be checked is not called invalid.
      const keyed = await gql(app, READ, { id: createSession.id }, { apiKey: 'unknown-key-0123456789abcdef' });
      expect(keyed.errors?.[0]?.extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      // Refused before execution: 503 with Retry-After for a client that accepts the GraphQL
      // response type (the fast path hands such a request to Yoga), 200 for application/json.
      for (const [accept, status] of [
        ['application/graphql-response+json', 503],
        ['application/graphql-response+json, application/json;q=0.9', 503],
        ['application/json', 200],
        [undefined, 200],
      ] as const) {
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer unknown-key-0123456789abcdef',
            ...(accept ? { accept } : {}),
          },
          body: JSON.stringify({ query: READ, variables: { id: createSession.id } }),
        });
        const body = (await response.json()) as { errors: { extensions: Record<string, unknown> }[] };
        expect([accept, response.status]).toEqual([accept, status]);
        // Retry-After goes with the 503 only: a 200 says nothing of when to retry at the HTTP level.
        expect([accept, response.headers.get('retry-after')]).toEqual([accept, status === 503 ? '2' : null]);
        expect(body.errors[0].extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
        expect(body.errors[0].extensions.http).toBeUndefined();
      }
      // An unknown key over WebSocket: the check itself cannot run, so "try again later", not 4403 or 4500.
      const client = wsClient(url, { Authorization: 'Bearer unknown-key-0123456789abcdef' });
      const sub = subscribeWs(client, EVENTS, { id: createSession.id }, (d) => d);
      await expect(sub.collector.until(() => false, 10_000)).rejects.toThrow(/close 1013 SERVICE_UNAVAILABLE/);
      await client.dispose();
      const ready = await readyz(app);
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 'unavailable', pubsub: 'ok', database: expect.stringMatching(/^error: /) });
    } finally {
      logged.mockRestore();
    }
    expect(lines.some((line) => line.includes('"msg":"dependency unavailable"'))).toBe(true);

    await pg.start();
    const read = await eventually(async () => {
      const result = await gql(app, READ, { id: createSession.id });
      return result.errors ? undefined : result.data;
    }, 'the database answers again');
    expect(read).toEqual({ session: { title: 'before', messageCount: 1 } });
    expect((await gql(app, CREATE, { title: 'after' })).errors).toBeUndefined();
    expect((await readyz(app)).body.status).toBe('ok');
  }, 120_000);
});

describe.runIf(redisServerAvailable)(`/readyz with Redis killed (a private redis-server, ${backend.label})`, () => {
  let redis: PrivateRedis;

  it('answers at once: 200 "degraded" naming pubsub, while queries (and the rate limiter) still work, and "ok" once Redis is back', async () => {
    redis = await startPrivateRedis();
    cleanups.push(() => redis.kill());
    // Rate limiting on, so its counters live in the Redis that dies: it must let requests through.
    const app = await createTestApp({
      config: { redisUrl: redis.url, readyTimeoutMs: 300, rateLimit: { requests: 1_000, windowMs: 60_000 } },
    });
    cleanups.push(() => app.close());
    expect(await readyz(app)).toEqual({ status: 200, body: { status: 'ok', database: 'ok', pubsub: 'ok' } });

    await redis.kill();
    const degraded = await readyz(app);
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ status: 'degraded', database: 'ok', pubsub: expect.stringMatching(/^error: /) });
    expect((await gql(app, '{ sessions(first: 1) { totalCount } }')).errors).toBeUndefined();

    await redis.restart();
    await eventually(async () => ((await readyz(app)).body.status === 'ok' ? true : undefined), 'readiness is ok again');
  }, 60_000);
});

describe(`graceful shutdown with requests and subscriptions in flight (${backend.label})`, () => {
  it('finishes the in-flight request, completes SSE streams, closes WebSockets with 1001, and stops listening', async () => {
    const app: TestApp = await createTestApp({ config: { shutdownGraceMs: 20_000 } });
    cleanups.push(() => app.close());
    const url = await app.listen(0, '127.0.0.1');
    const { createSession } = await gqlOk<{ createSession: { id: string } }, { title: string }>(app, CREATE, { title: 'bye' });
    const variables = { id: createSession.id, after: 0 };

    // An SSE subscriber over a real socket, holding its stream open.
    const sse = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: EVENTS, variables }),
    });
    const reader = sse.body!.getReader();
    let sseText = '';
    const decoder = new TextDecoder();
    while (!sseText.includes('"sequence":1')) sseText += decoder.decode((await reader.read()).value, { stream: true });
    const sseEnded = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return sseText;
        sseText += decoder.decode(value, { stream: true });
      }
    })();

    // A graphql-ws subscriber.
    const client = wsClient(url);
    const closed = new Promise<number>((resolve) => client.on('closed', (event) => resolve((event as { code: number }).code)));
    const ws = subscribeWs(client, EVENTS, variables, (d) => d);
    await ws.collector.until((e) => e.length >= 1);

    // A request in flight: headers sent and received, body not yet.
    const received = new Promise<void>((resolve) =>
      app.server.on('request', (req) => {
        if (req.headers['x-test'] === 'in-flight') resolve();
      }),
    );
    const body = JSON.stringify({ query: READ, variables: { id: createSession.id } });
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-test': 'in-flight' },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      (globalThis as { __finish?: () => void }).__finish = () => req.end(body.slice(10));
    });
    await received;

    const closing = app.close();
    expect(await sseEnded).toContain('event: complete');
    expect(await closed).toBe(1001);
    (globalThis as { __finish?: () => void }).__finish!();
    const finished = await answer;
    expect(finished.status).toBe(200);
    expect(JSON.parse(finished.text)).toEqual({ data: { session: { title: 'bye', messageCount: 1 } } });
    await closing;
    await expect(fetch(url.replace('/graphql', '/healthz'))).rejects.toThrow();
    await client.dispose();
  }, 60_000);
});
