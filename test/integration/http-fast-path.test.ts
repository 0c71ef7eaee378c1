import { request as httpRequest } from 'node:http';
import type { ValidationRule } from 'graphql';
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { fastPathCovers } from '../../src/http/fast-path-contract.js';
import { API_KEYS, backend, createTestApp, dropTestDatabases, gqlOk, type TestApp } from '../helpers/app.js';
import { CreateSession } from '../helpers/documents.js';

/**
 * The HTTP fast path (src/http/fast-path.ts) answers the common request without Yoga's HTTP layer.
 * Every request here is sent twice, over a real connection (where the fast path may take it) and
 * through `yoga.fetch` (Yoga's own path, which never meets the fast path), and both answers must be
 * the same: status, content type and body. The counters say which path answered, so a case that
 * should be the fast path's cannot pass by having fallen through to Yoga.
 */

interface Answer {
  status: number;
  type: string | null;
  retryAfter: string | null;
  body: unknown;
}

const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
  await dropTestDatabases();
});

/** An app with the fast path on (the deviation under test, whatever TEST_DEVIATIONS says). */
async function start(options: NonNullable<Parameters<typeof createTestApp>[0]>) {
  const app = await createTestApp({ ...options, deviations: { httpFastPath: true, ...options.deviations } });
  apps.push(app);
  return { app, url: new URL(await app.listen(0, '127.0.0.1')) };
}

/** A POST over a real connection, with exactly these headers (plus Host and Content-Length). */
function overHttp(url: URL, body: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            type: res.headers['content-type'] ?? null,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            body: text ? JSON.parse(text) : null,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function viaYoga(app: TestApp, body: string, headers: Record<string, string>): Promise<Answer> {
  const response = await app.yoga.fetch('http://localhost/graphql', { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    retryAfter: response.headers.get('retry-after'),
    body: text ? JSON.parse(text) : null,
  };
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const alpha = { ...JSON_HEADERS, authorization: `Bearer ${API_KEYS.alpha}` };
const SESSION = 'query ($id: ID!) { session(id: $id) { id title messageCount messages(first: 5) { edges { node { role text } } } } }';
const MISSING = 'U2Vzc2lvbjowMDAwMDAwMC0wMDAwLTcwMDAtODAwMC0wMDAwMDAwMDAwMDA=';

describe(`the HTTP fast path answers as Yoga does (${backend.label})`, () => {
  it('takes plain JSON operations, results with errors included, and hands Yoga everything else', async () => {
    const { app, url } = await start({ apiKeys: [{ workspace: 'alpha', key: API_KEYS.alpha }] });
    const created = await gqlOk(
      app,
      CreateSession,
      { input: { title: 'fast', messages: [{ role: 'USER', text: 'hello' }] } },
      { apiKey: API_KEYS.alpha },
    );
    const id = created.createSession.id;
    const op = (query: string, variables?: unknown, operationName?: string) => JSON.stringify({ query, variables, operationName });

    const cases: { name: string; body: string; headers?: Record<string, string>; path: 'fast' | 'yoga' | 'untouched' }[] = [
      { name: 'a query', body: op('{ __typename }'), path: 'fast' },
      { name: 'variables', body: op(SESSION, { id }), path: 'fast' },
      { name: 'no Accept header', body: op(SESSION, { id }), headers: alpha, path: 'fast' },
      { name: 'Accept */*', body: op(SESSION, { id }), headers: { ...alpha, accept: '*/*' }, path: 'fast' },
      {
        name: 'a charset',
        body: op(SESSION, { id }),
        headers: { ...alpha, 'content-type': 'application/json; charset=utf-8' },
        path: 'fast',
      },
      { name: 'NOT_FOUND beside data', body: op(SESSION, { id: MISSING }), path: 'fast' },
      { name: 'a missing variable', body: op(SESSION, {}), path: 'fast' },
      { name: 'a variable of the wrong type', body: op(SESSION, { id: 5 }), path: 'fast' },
      { name: 'a malformed global ID', body: op(SESSION, { id: 'not-an-id' }), path: 'fast' },
      {
        name: 'a chosen operation',
        body: op(`query A { __typename } query B { sessions(first: 1) { totalCount } }`, null, 'B'),
        path: 'fast',
      },
      { name: 'no operation chosen among two', body: op(`query A { __typename } query B { __typename }`), path: 'yoga' },
      { name: 'a refused argument', body: op('mutation { createSession(input: { title: "a\\u0000b" }) { id } }'), path: 'fast' },
      { name: 'a syntax error', body: op('{ session('), path: 'yoga' },
      { name: 'a validation error', body: op('{ nope }'), path: 'yoga' },
      { name: 'introspection', body: op('{ __schema { types { fields { type { name } } } } }'), path: 'fast' },
      {
        name: 'too many aliases (the query limits)',
        body: op(`{ ${Array.from({ length: 31 }, (_, i) => `a${i}: __typename`).join(' ')} }`),
        path: 'yoga',
      },
      { name: 'a body that is not JSON', body: '{"query": ', path: 'yoga' },
      { name: 'a batch', body: `[${op('{ __typename }')}]`, path: 'yoga' },
      { name: 'a JSON string', body: '"{ __typename }"', path: 'yoga' },
      { name: 'an unknown parameter', body: JSON.stringify({ query: '{ __typename }', x: 1 }), path: 'yoga' },
      { name: 'variables that are not an object', body: JSON.stringify({ query: '{ __typename }', variables: [1] }), path: 'yoga' },
      { name: 'a subscription', body: op(`subscription { sessionEvents(sessionId: "${id}") { sequence } }`), path: 'yoga' },
      { name: 'no key', body: op('{ __typename }'), headers: JSON_HEADERS, path: 'yoga' },
      {
        name: 'a wrong key',
        body: op('{ __typename }'),
        headers: { ...JSON_HEADERS, authorization: 'Bearer wrong-key-0123456789abcdef' },
        path: 'yoga',
      },
      {
        name: 'graphql-response+json',
        body: op('{ nope }'),
        headers: { ...alpha, accept: 'application/graphql-response+json' },
        path: 'untouched',
      },
      { name: 'another media type', body: op('{ __typename }'), headers: { ...alpha, 'content-type': 'text/plain' }, path: 'untouched' },
    ];
    for (const c of cases) {
      const headers = c.headers ?? { ...alpha, accept: 'application/json' };
      const before = { ...app.fastPath };
      const fast = await overHttp(url, c.body, headers);
      const moved = { answered: app.fastPath.answered - before.answered, handedOver: app.fastPath.handedOver - before.handedOver };
      expect(moved, c.name).toEqual({
        answered: c.path === 'fast' ? 1 : 0,
        handedOver: c.path === 'yoga' ? 1 : 0,
      });
      expect(fast, c.name).toEqual(await viaYoga(app, c.body, headers));
      // The operations that reach execution on this path are still answered, with data or a client error.
      expect(fast.status, c.name).toBeLessThan(500);
    }
  });

  it('writes through it: a mutation answered by the fast path is stored once', async () => {
    const { app, url } = await start({ apiKeys: [{ workspace: 'alpha', key: API_KEYS.alpha }] });
    const before = app.fastPath.answered;
    const answer = await overHttp(
      url,
      JSON.stringify({
        query: 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id title messageCount } }',
        variables: { input: { title: 'over the fast path', messages: [{ role: 'USER', text: 'one' }] } },
      }),
      alpha,
    );
    expect(app.fastPath.answered).toBe(before + 1);
    expect(answer.status).toBe(200);
    const session = (answer.body as { data: { createSession: { id: string; title: string; messageCount: number } } }).data.createSession;
    expect(session).toMatchObject({ title: 'over the fast path', messageCount: 1 });
    const read = await viaYoga(app, JSON.stringify({ query: SESSION, variables: { id: session.id } }), alpha);
    expect(read.body).toEqual({
      data: {
        session: {
          id: session.id,
          title: 'over the fast path',
          messageCount: 1,
          messages: { edges: [{ node: { role: 'USER', text: 'one' } }] },
        },
      },
    });
  });

  it('counts every request once against the rate limit, whichever path answers it', async () => {
    const { app, url } = await start({
      apiKeys: [{ workspace: 'alpha', key: API_KEYS.alpha }],
      // A fixed window of an hour: one boundary falling within the test's second is unlikely.
      config: { rateLimit: { requests: 4, windowMs: 3_600_000 } },
    });
    const query = JSON.stringify({ query: '{ __typename }' });
    const code = (answer: Answer) => (answer.body as { errors?: { extensions: { code: string } }[] }).errors?.[0]?.extensions.code;
    // A key counts against itself. alpha: answered here; not JSON, handed over uncounted (Yoga
    // counts it); a syntax error, counted here and handed over marked as counted (Yoga must not count
    // it again, or the next would be over the limit); answered here: four.
    expect((await overHttp(url, query, alpha)).status).toBe(200);
    expect((await overHttp(url, '{"query": ', alpha)).status).toBe(400);
    expect(code(await overHttp(url, JSON.stringify({ query: '{ __typename' }), alpha))).toBe('BAD_USER_INPUT');
    expect((await overHttp(url, query, alpha)).status).toBe(200);
    expect(app.fastPath).toEqual({ answered: 2, handedOver: 2 });
    // The fifth is refused by the fast path itself, as Yoga's useRateLimit refuses.
    const limited = await overHttp(url, query, alpha);
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(limited.body).toEqual({
      errors: [
        {
          message: expect.stringMatching(/^Too many requests/),
          extensions: { code: 'RATE_LIMITED', retryAfter: Number(limited.retryAfter) },
        },
      ],
    });
    // And on Yoga's path too.
    expect((await overHttp(url, '{"query": ', alpha)).status).toBe(429);
    // A wrong key is counted here, then handed over marked as counted: Yoga must not count it
    // again, or the third would already be over the limit.
    const wrongKey = { ...JSON_HEADERS, authorization: 'Bearer wrong-key-0123456789abcdef' };
    for (let i = 0; i < 4; i++) expect(code(await overHttp(url, query, wrongKey)), `wrong key, request ${i + 1}`).toBe('UNAUTHENTICATED');
    expect(code(await overHttp(url, query, wrongKey))).toBe('RATE_LIMITED');
  });

  it('refuses at build a plugin with a hook the fast path would skip, unless the hook is marked as covered', async () => {
    const skipped = ['onRequest', 'onRequestParse', 'onParams', 'onResultProcess', 'onResponse', 'instrumentation'];
    const plugin = Object.fromEntries(skipped.map((hook) => [hook, () => {}]));
    await expect(createTestApp({ plugins: [{ onExecute: () => {} }, plugin] })).rejects.toThrow(
      `has hooks the HTTP fast path does not run (${skipped.join(', ')})`,
    );
    // Envelop's hooks run on the fast path as on Yoga's; a covered hook is the plugin's statement.
    apps.push(await createTestApp({ plugins: [{ onExecute: () => {} }, fastPathCovers({ onRequest: () => {} }, ['onRequest'])] }));
  });

  it("runs every plugin's onValidate on every request, so a rule added for one request's context is never skipped", async () => {
    const refuseTypename: ValidationRule = (context) => ({
      Field(node) {
        if (node.name.value === '__typename') context.reportError(new GraphQLError('Refused for this request.', { nodes: node }));
      },
    });
    const onValidate = vi.fn(({ context, addValidationRule }: Parameters<NonNullable<Plugin['onValidate']>>[0]) => {
      const request = (context as { request?: { headers: { get(name: string): string | null } } }).request;
      if (request?.headers.get('x-refuse') === 'yes') addValidationRule(refuseTypename);
    });
    const { app, url } = await start({ plugins: [{ onValidate }] });
    const query = JSON.stringify({ query: '{ __typename }' });
    const before = { ...app.fastPath };
    // The same document, valid twice on the fast path, then refused for the request the rule applies to.
    for (let i = 0; i < 2; i++) expect((await overHttp(url, query, JSON_HEADERS)).body).toEqual({ data: { __typename: 'Query' } });
    expect(app.fastPath.answered - before.answered).toBe(2);
    const refused = await overHttp(url, query, { ...JSON_HEADERS, 'x-refuse': 'yes' });
    expect(refused.body).toMatchObject({ errors: [{ message: 'Refused for this request.' }] });
    expect((await overHttp(url, query, JSON_HEADERS)).body).toEqual({ data: { __typename: 'Query' } });
    // Each request validated: 2 answered, 1 refused here and again on Yoga's path, 1 answered.
    expect(onValidate).toHaveBeenCalledTimes(5);
  });
});
