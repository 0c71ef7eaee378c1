import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { print } from 'graphql';
import { backend, createTestApp, dropTestDatabases, type TestApp, testDeviations } from '../helpers/app.js';
import { AppendMessages, CreateSession, NodeQuery, SessionEventsFeed, SessionsList, UpdateSession } from '../helpers/documents.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

const MANIFEST = resolve(new URL('../generated/persisted-documents.json', import.meta.url).pathname);
const FULL = 'trusted-full-key-0123456789';
const READ = 'trusted-read-key-0123456789';
const keys = [
  { workspace: 'alpha', key: FULL },
  { workspace: 'alpha', key: READ, scope: 'READ' as const },
];

/** The manifest hash codegen embedded in a typed document (client preset, persistedDocuments). */
const hashOf = (document: unknown) => (document as { __meta__: { hash: string } }).__meta__.hash;

async function post(app: TestApp, body: Record<string, unknown>, key = FULL) {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: each test reads the fields of its own document.
  type Body = { data?: Record<string, any>; errors?: { message: string; extensions?: { code?: string } }[] };
  const json = (await response.json()) as Body;
  return { status: response.status, ...json };
}

const byId = (document: unknown, variables: Record<string, unknown>) => ({ documentId: hashOf(document), variables });
const byApqHash = (document: unknown, variables: Record<string, unknown>) => ({
  variables,
  extensions: { persistedQuery: { version: 1, sha256Hash: hashOf(document) } },
});

describe(`TRUSTED_DOCUMENTS (${backend.label})`, () => {
  let app: TestApp;
  let playground: TestApp;
  beforeAll(async () => {
    // As in production: GraphiQL off, so no document runs as text, whatever the key.
    app = await createTestApp({ apiKeys: keys, config: { trustedDocuments: MANIFEST, graphiql: false } });
    playground = await createTestApp({ apiKeys: keys, config: { trustedDocuments: MANIFEST, graphiql: true } });
  });
  afterAll(async () => {
    await app?.close();
    await playground?.close();
    await dropTestDatabases();
  });

  it("runs the suite's documents by hash over HTTP (documentId and extensions.persistedQuery), and nothing else", async () => {
    const created = await post(app, byId(CreateSession, { input: { title: 'trusted', messages: [{ role: 'USER', text: 'hi' }] } }));
    expect(created.errors).toBeUndefined();
    const id = created.data!.createSession.id as string;
    const appended = await post(app, byApqHash(AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: 'more' }] } }));
    expect(appended.errors).toBeUndefined();
    const renamed = await post(app, byId(UpdateSession, { input: { sessionId: id, title: 'renamed' } }));
    expect(renamed.errors).toBeUndefined();
    const listed = await post(app, byApqHash(SessionsList, { first: 5, messages: 5 }), READ);
    expect(listed.data!.sessions.edges[0].node).toMatchObject({ id, title: 'renamed', messageCount: 2 });
    const answered = app.fastPath.answered;
    const node = await post(app, byId(NodeQuery, { id }), READ);
    expect(node.errors).toBeUndefined();
    // A listed document named without text is the fast path's (when on), which runs the manifest's document.
    expect(app.fastPath.answered).toBe(answered + (testDeviations.httpFastPath ? 1 : 0));

    // An unlisted document, as text: refused, with a coded 4xx, and nothing written.
    const adHoc = await post(app, { query: print(CreateSession), variables: { input: { title: 'sneaky' } } });
    expect(adHoc.status).toBe(403);
    expect(adHoc.errors![0].extensions?.code).toBe('FORBIDDEN');
    expect(adHoc.errors![0].message).toMatch(/only trusted documents/);
    const unknown = await post(app, { documentId: 'f'.repeat(64), variables: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.errors![0].extensions?.code).toBe('NOT_FOUND');
    const nameless = await post(app, { variables: {} });
    expect(nameless.status).toBe(400);
    expect(nameless.errors![0].extensions?.code).toBe('BAD_USER_INPUT');
    const after = await post(app, byId(SessionsList, { first: 50 }));
    expect(after.data!.sessions.totalCount).toBe(1);
  });

  it('runs them by hash over WebSocket; a document sent as text is refused there too', async () => {
    const created = await post(app, byId(CreateSession, { input: { title: 'watched' } }));
    const id = created.data!.createSession.id as string;
    const client = wsClient(app.url, { Authorization: `Bearer ${READ}` });
    try {
      const persisted = { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: hashOf(SessionEventsFeed) } } };
      const events: number[] = [];
      let failure: unknown;
      const stop = client.subscribe(
        { ...persisted, variables: { id, after: 0 } },
        {
          next: (r) => events.push((r.data as { sessionEvents: { sequence: number } }).sessionEvents.sequence),
          error: (e) => (failure = e),
          complete: () => {},
        },
      );
      await post(app, byApqHash(AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: 'live' }] } }));
      for (let i = 0; i < 200 && events.length < 1 && !failure; i++) await new Promise((r) => setTimeout(r, 25));
      expect(failure).toBeUndefined();
      expect(events).toEqual([1]);
      stop();
      const query = await new Promise<unknown>((done, fail) => {
        client.subscribe({ query: '', documentId: hashOf(NodeQuery), variables: { id } } as never, {
          next: done,
          error: fail,
          complete: () => {},
        });
      });
      expect((query as { data: { node: { id: string } } }).data.node.id).toBe(id);
      const adHoc = subscribeWs(client, SessionEventsFeed, { id }, (d) => d);
      await expect(adHoc.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN/);
    } finally {
      await client.dispose();
    }
  });

  it('where the operator turned GraphiQL on, a full-scope key may still send documents as text; a read-only key may not', async () => {
    const adHoc = { query: print(SessionsList), variables: { first: 1 } };
    const full = await post(playground, adHoc, FULL);
    expect(full.errors).toBeUndefined();
    const read = await post(playground, adHoc, READ);
    expect(read.status).toBe(403);
    expect(read.errors![0].extensions?.code).toBe('FORBIDDEN');
    expect((await post(playground, byId(SessionsList, { first: 1 }), READ)).errors).toBeUndefined();
  });
});
