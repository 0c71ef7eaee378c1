import { connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { backend, createTestApp, dropTestDatabases, gql, gqlOk, type TestApp } from '../helpers/app.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

// Most tests here build their own app (a fresh database each): allow for a loaded machine.
vi.setConfig({ testTimeout: 90_000 });

const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
  await dropTestDatabases();
});
async function make(...args: Parameters<typeof createTestApp>) {
  const app = await createTestApp(...args);
  apps.push(app);
  return app;
}

const CREATE = 'mutation { createSession(input: {title: "csrf"}) { id } }';
const COUNT = '{ sessions(first: 1) { totalCount } }';
const sessionCount = async (app: TestApp) => (await gqlOk<{ sessions: { totalCount: number } }, never>(app, COUNT)).sessions.totalCount;

describe(`browsers: CORS, CSRF, JSON-only mutations (${backend.label})`, () => {
  let app: TestApp;

  it('allows only configured origins, never echoing an arbitrary Origin with credentials', async () => {
    app = await make({ config: { corsOrigins: ['https://app.example.com', 'https://admin.example.com'] } });
    const preflight = (origin: string) =>
      app.yoga.fetch('http://localhost/graphql', {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
      });
    const allowed = await preflight('https://admin.example.com');
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://admin.example.com');
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');

    const evil = await preflight('https://evil.example');
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(evil.headers.get('access-control-allow-credentials')).toBeNull();

    const post = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ query: COUNT }),
    });
    expect(post.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers any origin without credentials when CORS_ORIGINS is *', async () => {
    const open = await make({ config: { corsOrigins: ['*'] } });
    const response = await open.yoga.fetch('http://localhost/graphql', {
      method: 'OPTIONS',
      headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' },
    });
    // Echoed (with Vary: Origin), which is what `*` means, and never with credentials.
    expect(response.headers.get('access-control-allow-origin')).toBe('https://anywhere.example');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('refuses mutations from form-urlencoded, multipart and text/plain POSTs, writing nothing', async () => {
    const before = await sessionCount(app);
    const bodies: [string, BodyInit][] = [
      ['application/x-www-form-urlencoded', new URLSearchParams({ query: CREATE }).toString()],
      ['text/plain', JSON.stringify({ query: CREATE })],
    ];
    for (const [type, body] of bodies) {
      const response = await app.yoga.fetch('http://localhost/graphql', { method: 'POST', headers: { 'content-type': type }, body });
      expect(response.status, type).toBe(415);
      expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    const form = new FormData();
    form.set('operations', JSON.stringify({ query: CREATE }));
    form.set('map', '{}');
    // Multipart carries uploads, so it is accepted, but only with a header no form can set.
    const multipart = await app.yoga.fetch('http://localhost/graphql', { method: 'POST', body: form });
    expect(multipart.status).toBe(403);
    expect(await sessionCount(app)).toBe(before);
  });

  it('refuses a GET without a CSRF header (a simple cross-site request), and mutations over GET at all', async () => {
    const before = await sessionCount(app);
    const plain = await app.yoga.fetch(`http://localhost/graphql?query=${encodeURIComponent(COUNT)}`);
    expect(plain.status).toBe(403);
    const withHeader = await app.yoga.fetch(`http://localhost/graphql?query=${encodeURIComponent(COUNT)}`, {
      headers: { 'graphql-require-preflight': '1' },
    });
    expect(withHeader.status).toBe(200);
    const mutation = await app.yoga.fetch(`http://localhost/graphql?query=${encodeURIComponent(CREATE)}`, {
      headers: { 'graphql-require-preflight': '1' },
    });
    expect(mutation.status).toBe(405);
    expect(await sessionCount(app)).toBe(before);
  });

  it('serves the explorer page where GraphiQL is: built files only, talking to this origin only', async () => {
    const page = await app.yoga.fetch('http://localhost/explorer');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).toContain('src="/explorer/explorer.js"');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const script = await app.yoga.fetch('http://localhost/explorer/explorer.js');
    expect(script.headers.get('content-type')).toContain('text/javascript');
    expect((await script.text()).length).toBeGreaterThan(1_000);
    expect((await app.yoga.fetch('http://localhost/explorer/nothing.js')).status).toBe(404);
    expect((await app.yoga.fetch('http://localhost/explorer', { method: 'POST' })).status).toBe(405);
  });

  it('GRAPHIQL=false serves no GraphiQL page and no explorer, and refuses introspection, keeping __typename', async () => {
    const closed = await make({ config: { graphiql: false } });
    expect((await closed.yoga.fetch('http://localhost/explorer')).status).toBe(404);
    const page = await closed.yoga.fetch('http://localhost/graphql', { headers: { accept: 'text/html' } });
    expect(await page.text()).not.toMatch(/graphiql/i);
    const introspection = await gql(closed, '{ __schema { queryType { name } } }');
    expect(introspection.errors?.[0]?.message).toMatch(/introspection/i);
    expect(introspection.data).toBeUndefined();
    expect((await gql(closed, '{ __typename }')).data).toEqual({ __typename: 'Query' });
  });
});

describe(`rate limits (${backend.label})`, () => {
  it('answers RATE_LIMITED with retryAfter and a Retry-After header past the limit, per key', async () => {
    const keys = [
      { workspace: 'a', key: 'rate-a-key-0123456789abcdef' },
      { workspace: 'b', key: 'rate-b-key-0123456789abcdef' },
    ];
    const app = await make({ apiKeys: keys, config: { rateLimit: { requests: 3, windowMs: 60_000 } } });
    for (let i = 0; i < 3; i++) expect((await gql(app, COUNT, undefined, { apiKey: keys[0].key })).errors).toBeUndefined();
    const limited = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[0].key}` },
      body: JSON.stringify({ query: COUNT }),
    });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const body = (await limited.json()) as { errors: { extensions: Record<string, unknown> }[] };
    expect(body.errors[0].extensions).toEqual({ code: 'RATE_LIMITED', retryAfter });
    // Another key has its own budget.
    expect((await gql(app, COUNT, undefined, { apiKey: keys[1].key })).errors).toBeUndefined();
    // Health checks are never limited.
    expect((await app.yoga.fetch('http://localhost/healthz')).status).toBe(200);
  });

  it('counts WebSocket subscribes too: over the limit a subscribe gets RATE_LIMITED with retryAfter', async () => {
    const app = await make({ config: { rateLimit: { requests: 1, windowMs: 60_000 } } });
    const url = await app.listen(0, '127.0.0.1');
    const client = wsClient(url);
    const query = 'subscription { sessionEvents(sessionId: "U2Vzc2lvbjowMDAwMDAwMC0wMDAwLTcwMDAtODAwMC0wMDAwMDAwMDAwMDA=") { sequence } }';
    const first = subscribeWs(client, query, {}, (d) => d);
    const second = subscribeWs(client, query, {}, (d) => d);
    await expect(second.collector.until(() => false, 10_000)).rejects.toThrow(/"code":"RATE_LIMITED","retryAfter":\d+/);
    first.unsubscribe();
    await client.dispose();
  });

  it.runIf(backend.postgresUrl && backend.redisUrl)('shares one budget across instances through Redis', async () => {
    const key = { workspace: 'shared', key: 'rate-shared-0123456789abcdef' };
    const config = { rateLimit: { requests: 4, windowMs: 60_000 } };
    const first = await make({ apiKeys: [key], config });
    const second = await make({ apiKeys: [key], config, shareWith: first });
    const codes: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) {
      const result = await gql(i % 2 ? second : first, COUNT, undefined, { apiKey: key.key });
      codes.push(result.errors?.[0]?.extensions?.code as string | undefined);
    }
    expect(codes).toEqual([undefined, undefined, undefined, undefined, 'RATE_LIMITED', 'RATE_LIMITED']);
  });
});

describe(`response size caps (${backend.label})`, () => {
  it('refuses a page over 500 on every connection, and serves pages up to it', async () => {
    const app = await make();
    const { createSession } = await gqlOk<{ createSession: { id: string } }, never>(app, CREATE);
    const id = createSession.id;
    for (const query of [
      `{ session(id: "${id}") { messages(first: 501) { edges { cursor } } } }`,
      `{ sessions(first: 100000) { edges { cursor } } }`,
      `{ session(id: "${id}") { forks(first: 501) { edges { cursor } } } }`,
      `{ session(id: "${id}") { turns(last: 501) { edges { cursor } } } }`,
    ]) {
      const tooMany = await gql(app, query);
      expect(tooMany.errors?.[0]?.extensions?.code, query).toBe('BAD_USER_INPUT');
    }
    const largest = await gql(
      app,
      `{ sessions(first: 500) { edges { cursor } } session(id: "${id}") { messages(first: 500) { edges { cursor } } forks(first: 500) { edges { cursor } } turns(last: 500) { edges { cursor } } } }`,
    );
    expect(largest.errors).toBeUndefined();
  });
});

describe(`slow clients (${backend.label})`, () => {
  it('closes a connection whose headers never finish after HEADERS_TIMEOUT_MS', async () => {
    const app = await make({ config: { timeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 1_000, idleMs: 60_000 } } });
    const url = new URL(await app.listen(0, '127.0.0.1'));
    const socket = connect(Number(url.port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.write('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n');
    await new Promise((resolve) => socket.on('close', resolve));
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a connection whose body trickles in for longer than REQUEST_TIMEOUT_MS', async () => {
    const app = await make({ config: { timeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 1_000, idleMs: 60_000 } } });
    const url = new URL(await app.listen(0, '127.0.0.1'));
    const socket = connect(Number(url.port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.write('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"query"');
    const trickle = setInterval(() => socket.write(' '), 100);
    await new Promise((resolve) => socket.on('close', resolve));
    clearInterval(trickle);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });
});
