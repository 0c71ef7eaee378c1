import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/keys.js';
import { API_KEYS, backend, gql, gqlError, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { CreateSession, SessionsList } from '../helpers/documents.js';
import { subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';

const EVENTS = `subscription ScopedEvents($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSequence: $after) { sequence __typename } }`;
const pick = (data: Record<string, unknown>) => data.sessionEvents as { sequence: number; __typename: string };
const READ_ONLY = 'alpha-reader-0123456789abcdef';
const create = { input: { title: 'scoped', messages: [{ role: 'USER' as const, text: 'hi' }] } };

describe(`key scopes (${backend.label})`, () => {
  let app: TestApp;
  let reader: string;
  useTestApp(
    async (built) => {
      app = built;
      reader = (await createApiKey(app.runtime.db.prisma, { workspace: 'alpha', scope: 'READ' })).key;
    },
    // The bootstrap syntax: `workspace:key:read` in API_KEYS makes a read-only key.
    {
      apiKeys: [
        { workspace: 'alpha', key: API_KEYS.alpha },
        { workspace: 'alpha', key: READ_ONLY, scope: 'READ' },
      ],
    },
  );

  it('a READ key (created or from API_KEYS) lists sessions and subscribes; its mutations get FORBIDDEN naming the scope, and write nothing', async () => {
    const { createSession } = await gqlOk(app, CreateSession, create, { apiKey: API_KEYS.alpha });
    for (const key of [reader, READ_ONLY]) {
      const listed = await gqlOk(app, SessionsList, { first: 10 }, { apiKey: key });
      expect(listed.sessions.edges.map((e) => e.node.id)).toContain(createSession.id);
      const refused = await gqlError(app, CreateSession, create, { apiKey: key });
      expect(refused.code).toBe('FORBIDDEN');
      expect(refused.message).toMatch(/scope READ/);
      expect(refused.message).toContain('createSession');
      expect(refused.data ?? null).toBeNull();
    }
    // Through Yoga's own path too (a browser's request, with an Origin, never takes the fast path).
    const viaYoga = await gql(app, CreateSession, create, { apiKey: reader, headers: { origin: 'http://elsewhere.example' } });
    expect(viaYoga.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const after = await gqlOk(app, SessionsList, { first: 50 }, { apiKey: API_KEYS.alpha });
    expect(after.sessions.totalCount).toBe(1);
  });

  it('over WebSocket: a READ key subscribes and queries, and its mutation is refused with FORBIDDEN', async () => {
    const { createSession } = await gqlOk(app, CreateSession, create, { apiKey: API_KEYS.alpha });
    const client = wsClient(app.url, { Authorization: `Bearer ${reader}` });
    try {
      const sub = subscribeWs(client, EVENTS, { id: createSession.id, after: 0 }, pick);
      await sub.collector.until((events) => events.length >= 1, 10_000, 'the replayed event');
      const mutation = subscribeWs(client, CreateSession, create, (d) => d);
      await expect(mutation.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN/);
      sub.unsubscribe();
    } finally {
      await client.dispose();
    }
  });

  it('over SSE: a READ key subscribes; a mutation sent as an event stream is refused with FORBIDDEN', async () => {
    const { createSession } = await gqlOk(app, CreateSession, create, { apiKey: API_KEYS.alpha });
    const headers = { authorization: `Bearer ${reader}` };
    const sub = subscribeSse(app.yoga.fetch as never, EVENTS, { id: createSession.id, after: 0 }, pick, headers);
    await sub.collector.until((events) => events.length >= 1, 10_000, 'the replayed event');
    const mutation = subscribeSse(app.yoga.fetch as never, CreateSession, create, (d) => d, headers);
    await expect(mutation.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN/);
    sub.unsubscribe();
  });
});
