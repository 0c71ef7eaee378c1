import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/keys.js';
import {
  API_KEYS,
  backend,
  createTestApp,
  gql,
  gqlError,
  gqlOk,
  type TestApp,
  testConfig,
  TWO_WORKSPACES,
  useTestApp,
} from '../helpers/app.js';
import { subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';
// The explorer's read-only view runs these (explorer/src/documents.ts): they must stay inside what a share token may select.
import { ExplorerSharedEventsDocument, ExplorerSharedSessionDocument } from '../../explorer/generated/graphql.js';

const CREATE = `mutation C($input: CreateSessionInput!) { createSession(input: $input) { id messageCount } }`;
const FORK = `mutation F($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }`;
const APPEND = `mutation A($input: AppendMessagesInput!) { appendMessages(input: $input) { session { id messageCount } } }`;
const SHARE = `mutation S($input: CreateShareLinkInput!) { createShareLink(input: $input) { id url token expiresAt revokedAt active sessionId } }`;
const REVOKE = `mutation R($input: RevokeShareLinkInput!) { revokeShareLink(input: $input) { id revokedAt active token url } }`;
const READ = `query Read($id: ID!) {
  session(id: $id) {
    id title messageCount
    messages(first: 50) { edges { node { index role text parts { __typename ... on AttachmentPart { attachment { id url } } } } } }
  }
}`;
const NODE = `query N($id: ID!) { node(id: $id) { id ... on Session { title } } }`;
const LINKS = `query L($id: ID!) { session(id: $id) { shareLinks(first: 10) { totalCount edges { node { id token url active revokedAt expiresAt } } } } }`;
const EVENTS = `subscription E($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence __typename session { id } } }`;

type Read = {
  session: {
    id: string;
    messageCount: number;
    messages: {
      edges: { node: { index: number; text: string; parts: { __typename: string; attachment?: { id: string; url: string } }[] } }[];
    };
  } | null;
};

const text = (t: string) => ({ role: 'USER' as const, text: t });
const withFile = (t: string, name: string) => ({
  role: 'USER' as const,
  parts: [{ text: { text: t } }, { attachment: { name, mimeType: 'text/plain', content: `content of ${name}` } }],
});
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const attachmentsOf = (read: Read) =>
  read.session!.messages.edges.flatMap((e) => e.node.parts.flatMap((p) => (p.attachment ? [p.attachment] : [])));

describe(`share links (${backend.label})`, () => {
  let app: TestApp;
  let reader: string;
  // alpha: root A [q1+file, a1, q2+file], fork F of A at 2 (inherits q1, a1) with its own message; another session B. beta: C.
  let A: string;
  let F: string;
  let B: string;
  let C: string;
  useTestApp(
    async (built) => {
      app = built;
      reader = (await createApiKey(app.runtime.db.prisma, { workspace: 'alpha', scope: 'READ' })).key;
      const alpha = { apiKey: API_KEYS.alpha };
      const messages = [withFile('q1', 'inherited.txt'), { role: 'ASSISTANT', text: 'a1' }, withFile('q2', 'after-cut.txt')];
      A = ((await gqlOk(app, CREATE, { input: { title: 'root', messages } }, alpha)) as { createSession: { id: string } }).createSession.id;
      F = (
        (await gqlOk(app, FORK, { input: { sessionId: A, messageIndex: 2, title: 'shared fork' } }, alpha)) as never as {
          forkSession: { session: { id: string } };
        }
      ).forkSession.session.id;
      await gqlOk(app, APPEND, { input: { sessionId: F, messages: [withFile('fork own', 'own.txt')] } }, alpha);
      B = (
        (await gqlOk(app, CREATE, { input: { title: 'other', messages: [withFile('secret', 'b.txt')] } }, alpha)) as never as {
          createSession: { id: string };
        }
      ).createSession.id;
      C = (
        (await gqlOk(app, CREATE, { input: { title: 'beta', messages: [text('beta secret')] } }, { apiKey: API_KEYS.beta })) as never as {
          createSession: { id: string };
        }
      ).createSession.id;
    },
    // A revoked link's open streams are checked again every TTL: 1 s here, so the test waits little.
    { apiKeys: TWO_WORKSPACES, config: { caches: { ...testConfig().caches, apiKeyTtlMs: 1000 } } },
  );

  const share = async (sessionId: string, expiresAt?: string, apiKey = API_KEYS.alpha) =>
    (
      (await gqlOk(app, SHARE, { input: { sessionId, ...(expiresAt ? { expiresAt } : {}) } }, { apiKey })) as {
        createShareLink: { id: string; url: string; token: string; expiresAt: string; active: boolean; sessionId: string };
      }
    ).createShareLink;

  it('a share link reads its session, the inherited prefix included, over HTTP (fast path and Yoga)', async () => {
    const expiresAt = inDays(7);
    const link = await share(F, expiresAt);
    expect(link.token).toMatch(/^sgs_[A-Za-z0-9_-]{43}$/);
    expect(link.url).toContain(encodeURIComponent(link.token));
    expect(link.url).toMatch(/^\/explorer#share=/);
    expect(link.expiresAt).toBe(expiresAt);
    expect(link.active).toBe(true);
    expect(link.sessionId).toBe(F);
    for (const headers of [{}, { origin: 'http://elsewhere.example' }] as Record<string, string>[]) {
      const read = (await gqlOk(app, READ, { id: F }, { apiKey: link.token, headers })) as Read;
      expect(read.session!.messages.edges.map((e) => e.node.text)).toEqual(['q1', 'a1', 'fork own']);
      expect(read.session!.messageCount).toBe(3);
      const node = (await gqlOk(app, NODE, { id: F }, { apiKey: link.token, headers })) as { node: { id: string } | null };
      expect(node.node?.id).toBe(F);
    }
  });

  it('a redacted message reads as its replacement through a share link, its original still through a key', async () => {
    const alpha = { apiKey: API_KEYS.alpha };
    const { createSession } = (await gqlOk(
      app,
      `mutation C($input: CreateSessionInput!) { createSession(input: $input) { id messages(first: 5) { edges { node { id } } } } }`,
      { input: { title: 'redacted', messages: [text('my card is 4111 1111 1111 1111'), { role: 'ASSISTANT', text: 'noted' }] } },
      alpha,
    )) as { createSession: { id: string; messages: { edges: { node: { id: string } }[] } } };
    const secret = createSession.messages.edges[0].node.id;
    await gqlOk(
      app,
      `mutation R($input: RedactMessageInput!) { redactMessage(input: $input) { message { id } } }`,
      { input: { messageId: secret, replacement: '[card number removed]' } },
      alpha,
    );
    const link = await share(createSession.id);
    const shown = (key: string) =>
      gqlOk(app, READ, { id: createSession.id }, { apiKey: key }).then((r) =>
        (r as Read).session!.messages.edges.map((e) => [e.node.text, e.node.parts.length]),
      );
    expect(await shown(link.token)).toEqual([
      ['[card number removed]', 1],
      ['noted', 1],
    ]);
    expect((await shown(API_KEYS.alpha))[0][0]).toBe('my card is 4111 1111 1111 1111');
    const parts = (await gqlOk(
      app,
      `query P($id: ID!) { node(id: $id) { ... on Message { text parts { ... on TextPart { text } } } } }`,
      { id: secret },
      { apiKey: link.token },
    )) as { node: { text: string; parts: { text: string }[] } | null };
    // A message is not a session: node(id:) of a message answers null to a share token, whatever it holds.
    expect(parts.node).toBeNull();
  });

  it('cannot export (its session or another) nor import: 403, nothing written', async () => {
    const link = await share(F);
    const origin = new URL(app.url).origin;
    const auth = { authorization: `Bearer ${link.token}` };
    for (const id of [F, A, B]) {
      const globalId = Buffer.from(`Session:${id}`).toString('base64');
      const response = await fetch(`${origin}/export/sessions/${globalId}?tree=true`, { headers: auth });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('FORBIDDEN');
    }
    const before = await app.runtime.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM "Session"');
    const imported = await fetch(`${origin}/import`, { method: 'POST', headers: auth, body: '{"type":"header"}\n' });
    expect(imported.status).toBe(403);
    const after = await app.runtime.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM "Session"');
    expect(after[0].n).toBe(before[0].n);
  });

  it("the explorer's read-only view: its url opens the session, and its documents run with the token (HTTP and WebSocket)", async () => {
    const link = await share(F);
    const fragment = new URLSearchParams(link.url.slice(link.url.indexOf('#') + 1));
    expect(fragment.get('share')).toBe(link.token);
    expect(fragment.get('session')).toBe(F);
    const page = await fetch(new URL(link.url, app.url).href.split('#')[0]);
    expect(page.status).toBe(200);
    const view = (await gqlOk(app, ExplorerSharedSessionDocument.toString(), { id: F }, { apiKey: link.token })) as never as Read;
    expect(view.session!.messages.edges.map((e) => e.node.text)).toEqual(['q1', 'a1', 'fork own']);
    const client = wsClient(app.url, { Authorization: `Bearer ${link.token}` });
    try {
      const pick = (d: Record<string, unknown>) => d.sessionEvents as { sequence: number };
      const sub = subscribeWs(client, ExplorerSharedEventsDocument.toString(), { sessionId: F, afterSequence: 0 }, pick);
      await sub.collector.until((e) => e.length >= 1, 10_000, 'the replayed events');
      sub.unsubscribe();
    } finally {
      await client.dispose();
    }
  });

  it('another session is not found: its parent, a session of the same workspace, one of another workspace, by session(id:) and node(id:)', async () => {
    const { token } = await share(F);
    for (const id of [A, B, C]) {
      expect(((await gqlOk(app, READ, { id }, { apiKey: token })) as Read).session).toBeNull();
      expect(((await gqlOk(app, NODE, { id }, { apiKey: token })) as { node: unknown }).node).toBeNull();
    }
    // A message's id (even one the session shows) is no way around it.
    const fromKey = (await gqlOk(app, `query { session(id: "${F}") { messages(first: 1) { edges { node { id } } } } }`, undefined, {
      apiKey: API_KEYS.alpha,
    })) as { session: { messages: { edges: { node: { id: string } }[] } } };
    const messageId = fromKey.session.messages.edges[0].node.id;
    expect(((await gqlOk(app, NODE, { id: messageId }, { apiKey: token })) as { node: unknown }).node).toBeNull();
  });

  it('fields that lead away from the session, lists, search and mutations are refused with FORBIDDEN, and write nothing', async () => {
    const { token } = await share(F);
    for (const query of [
      `{ session(id: "${F}") { parent { id } } }`,
      `{ session(id: "${F}") { root { id title } } }`,
      `{ session(id: "${F}") { ancestors { id } } }`,
      `{ session(id: "${F}") { id forks(first: 5) { edges { node { id } } } } }`,
      `{ session(id: "${F}") { messages(first: 5) { edges { node { session { id } } } } } }`,
      `{ session(id: "${F}") { shareLinks(first: 5) { totalCount } } }`,
      `{ sessions(first: 5) { edges { node { id title } } } }`,
      `{ searchMessages(query: "secret") { edges { message { text } } } }`,
      `{ __schema { types { name } } }`,
      `query { node(id: "${F}") { ... on Session { parent { id } } } }`,
      `fragment P on Session { root { id } } query { session(id: "${F}") { ...P } }`,
    ]) {
      const refused = await gqlError(app, query, undefined, { apiKey: token });
      expect(refused.code, query).toBe('FORBIDDEN');
      expect((refused.data as { session?: unknown } | null | undefined)?.session ?? null).toBeNull();
    }
    const write = await gqlError(app, APPEND, { input: { sessionId: F, messages: [text('intruder')] } }, { apiKey: token });
    expect(write.code).toBe('FORBIDDEN');
    const newLink = await gqlError(app, SHARE, { input: { sessionId: F } }, { apiKey: token });
    expect(newLink.code).toBe('FORBIDDEN');
    const read = (await gqlOk(app, READ, { id: F }, { apiKey: API_KEYS.alpha })) as Read;
    expect(read.session!.messageCount).toBe(3);
  });

  it('holds on GraphQL over GET and on subscriptions (WebSocket and SSE): a field leading away is FORBIDDEN there too', async () => {
    const { token } = await share(F);
    const get = async (query: string) => {
      const url = `${app.url}?query=${encodeURIComponent(query)}`;
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/graphql-response+json', 'graphql-require-preflight': '1' },
      });
      return (await response.json()) as { data?: Record<string, { title?: string } | null>; errors?: { extensions?: { code?: string } }[] };
    };
    expect((await get(`{ session(id: "${F}") { title } }`)).data?.session?.title).toBe('shared fork');
    expect((await get(`{ session(id: "${B}") { title } }`)).data?.session).toBeNull();
    expect((await get(`{ session(id: "${F}") { parent { title } } }`)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const away = `subscription($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence ... on SessionForked { fork { id title } } } }`;
    const client = wsClient(app.url, { Authorization: `Bearer ${token}` });
    try {
      const ws = subscribeWs(client, away, { id: F }, (d) => d);
      await expect(ws.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN|share link/);
    } finally {
      await client.dispose();
    }
    const sse = subscribeSse(app.yoga.fetch as never, away, { id: F }, (d) => d, { authorization: `Bearer ${token}` });
    await expect(sse.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN|share link/);
    sse.unsubscribe();
    const other = subscribeSse(app.yoga.fetch as never, EVENTS, { id: B }, (d) => d, { authorization: `Bearer ${token}` });
    await expect(other.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/NOT_FOUND|was not found/);
    other.unsubscribe();
  });

  it('downloads the attachments its session shows (inherited ones included), not those after the cut or of another session', async () => {
    const { token } = await share(F);
    const [inherited, own] = attachmentsOf((await gqlOk(app, READ, { id: F }, { apiKey: token })) as Read);
    const [, afterCut] = attachmentsOf((await gqlOk(app, READ, { id: A }, { apiKey: API_KEYS.alpha })) as Read);
    const [other] = attachmentsOf((await gqlOk(app, READ, { id: B }, { apiKey: API_KEYS.alpha })) as Read);
    const origin = new URL(app.url).origin;
    const get = (url: string, key: string) => fetch(origin + url, { headers: { authorization: `Bearer ${key}` } });
    const ok = await get(inherited.url, token);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('content of inherited.txt');
    const mine = await get(own.url, token);
    expect(mine.status).toBe(200);
    expect(await mine.text()).toBe('content of own.txt');
    for (const attachment of [afterCut, other]) {
      expect((await get(attachment.url, token)).status).toBe(404);
      expect((await get(attachment.url, API_KEYS.alpha)).status).toBe(200);
    }
  });

  it('over WebSocket: follows its session (sessionEvents), another session is not found, a query through the socket holds the same fence', async () => {
    const { token } = await share(F);
    const client = wsClient(app.url, { Authorization: `Bearer ${token}` });
    try {
      const sub = subscribeWs(client, EVENTS, { id: F }, (d) => d.sessionEvents as { sequence: number; session: { id: string } });
      const events = await sub.collector.until((e) => e.length >= 1, 10_000, 'the replayed events');
      expect(events.every((e) => e.session.id === F)).toBe(true);
      sub.unsubscribe();
      const other = subscribeWs(client, EVENTS, { id: B }, (d) => d);
      await expect(other.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/NOT_FOUND|was not found/);
      const parent = subscribeWs(client, `{ session(id: "${F}") { parent { id } } }`, {}, (d) => d);
      await expect(parent.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/FORBIDDEN|share link/);
    } finally {
      await client.dispose();
    }
  });

  it('a subscription opened before the revocation (or the expiry) delivers nothing after it', async () => {
    const revoked = await share(F);
    const expiring = await share(F, new Date(Date.now() + 2500).toISOString());
    const follow = (token: string) => {
      const client = wsClient(app.url, { Authorization: `Bearer ${token}` });
      const sub = subscribeWs(
        client,
        `subscription E($id: ID!) { sessionEvents(sessionId: $id) { sequence ... on MessageAdded { message { text } } } }`,
        { id: F },
        (d) => d.sessionEvents as { message?: { text: string } },
      );
      return { client, sub };
    };
    const [r, e] = [follow(revoked.token), follow(expiring.token)];
    const append = (t: string) => gqlOk(app, APPEND, { input: { sessionId: F, messages: [text(t)] } }, { apiKey: API_KEYS.alpha });
    const texts = (events: { message?: { text: string } }[]) => events.map((ev) => ev.message?.text);
    try {
      // Live: wait until both streams deliver, then revoke one, let the other expire.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await append('before');
      await r.sub.collector.until((ev) => texts(ev).includes('before'), 10_000, 'the event before the revocation');
      await e.sub.collector.until((ev) => texts(ev).includes('before'), 10_000, 'the event before the expiry');
      await gqlOk(app, REVOKE, { input: { id: revoked.id } }, { apiKey: API_KEYS.alpha });
      await new Promise((resolve) => setTimeout(resolve, Math.max(2700 - 300, 1500)));
      await append('after');
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(texts(r.sub.collector.events)).not.toContain('after');
      expect(texts(e.sub.collector.events)).not.toContain('after');
      // A stream of a link still in force got it.
      const { token } = await share(F);
      const fresh = follow(token);
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await append('later');
        await fresh.sub.collector.until((ev) => texts(ev).includes('later'), 10_000, 'a valid link still follows');
      } finally {
        await fresh.client.dispose();
      }
    } finally {
      await r.client.dispose();
      await e.client.dispose();
    }
  });

  it('Session.shareLinks lists links without tokens; revoking refuses the token (UNAUTHENTICATED), again is a no-op, unknown or another workspace is NOT_FOUND', async () => {
    const link = await share(B);
    expect(((await gqlOk(app, READ, { id: B }, { apiKey: link.token })) as Read).session?.id).toBe(B);
    const listed = (await gqlOk(app, LINKS, { id: B }, { apiKey: reader })) as {
      session: {
        shareLinks: { totalCount: number; edges: { node: { id: string; token: string | null; url: string | null; active: boolean } }[] };
      };
    };
    expect(listed.session.shareLinks.totalCount).toBe(1);
    expect(listed.session.shareLinks.edges[0].node).toMatchObject({ id: link.id, token: null, url: null, active: true });

    expect((await gqlError(app, REVOKE, { input: { id: link.id } }, { apiKey: API_KEYS.beta })).code).toBe('NOT_FOUND');
    expect((await gqlError(app, REVOKE, { input: { id: link.id } }, { apiKey: reader })).code).toBe('FORBIDDEN');
    const revoked = (await gqlOk(app, REVOKE, { input: { id: link.id } }, { apiKey: API_KEYS.alpha })) as {
      revokeShareLink: { revokedAt: string; active: boolean; token: null };
    };
    expect(revoked.revokeShareLink.active).toBe(false);
    expect(revoked.revokeShareLink.token).toBeNull();
    const refused = await gql(app, READ, { id: B }, { apiKey: link.token });
    expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(refused.data ?? null).toBeNull();
    const again = (await gqlOk(app, REVOKE, { input: { id: link.id } }, { apiKey: API_KEYS.alpha })) as typeof revoked;
    expect(again.revokeShareLink.revokedAt).toBe(revoked.revokeShareLink.revokedAt);
    expect((await gqlError(app, REVOKE, { input: { id: link.id.slice(0, -4) + 'AAAA' } }, { apiKey: API_KEYS.alpha })).code).toMatch(
      /NOT_FOUND|BAD_USER_INPUT/,
    );
    expect((await gqlError(app, REVOKE, { input: { id: 'not an id' } }, { apiKey: API_KEYS.alpha })).code).toBe('BAD_USER_INPUT');
    // Nor over WebSocket, nor for its attachments.
    const client = wsClient(app.url, { Authorization: `Bearer ${link.token}` });
    try {
      const sub = subscribeWs(client, EVENTS, { id: B }, (d) => d);
      await expect(sub.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/4403|Forbidden|UNAUTHENTICATED/);
    } finally {
      await client.dispose();
    }
  });

  it('an expired link is refused with UNAUTHENTICATED, even while its lookup is cached', async () => {
    const link = await share(F, new Date(Date.now() + 1500).toISOString());
    expect(((await gqlOk(app, READ, { id: F }, { apiKey: link.token })) as Read).session?.id).toBe(F);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const refused = await gqlError(app, READ, { id: F }, { apiKey: link.token });
    expect(refused.code).toBe('UNAUTHENTICATED');
    expect(refused.message).toMatch(/expired/);
  });

  it('createShareLink: expiresAt in the past or beyond a year is BAD_USER_INPUT, another workspace’s session NOT_FOUND, a READ key FORBIDDEN; nothing is stored', async () => {
    const before = await app.runtime.db.prisma.shareLink.count();
    const past = await gqlError(
      app,
      SHARE,
      { input: { sessionId: F, expiresAt: new Date(Date.now() - 1000).toISOString() } },
      { apiKey: API_KEYS.alpha },
    );
    expect(past.code).toBe('BAD_USER_INPUT');
    const far = await gqlError(app, SHARE, { input: { sessionId: F, expiresAt: inDays(400) } }, { apiKey: API_KEYS.alpha });
    expect(far.code).toBe('BAD_USER_INPUT');
    expect((await gqlError(app, SHARE, { input: { sessionId: C } }, { apiKey: API_KEYS.alpha })).code).toBe('NOT_FOUND');
    expect((await gqlError(app, SHARE, { input: { sessionId: F } }, { apiKey: reader })).code).toBe('FORBIDDEN');
    expect(await app.runtime.db.prisma.shareLink.count()).toBe(before);
    // Without expiresAt: 30 days.
    const link = await share(F);
    const days = (Date.parse(link.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
  });

  it('malformed input is BAD_USER_INPUT; concurrent creations never pass the cap of 100 links in force per session', async () => {
    const badDate = await gql(app, SHARE, { input: { sessionId: F, expiresAt: 'next tuesday' } }, { apiKey: API_KEYS.alpha });
    expect(badDate.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect((await gqlError(app, SHARE, { input: { sessionId: 'nope' } }, { apiKey: API_KEYS.alpha })).code).toBe('BAD_USER_INPUT');
    const own = (await gqlOk(app, CREATE, { input: { title: 'capped' } }, { apiKey: API_KEYS.alpha })) as { createSession: { id: string } };
    const id = own.createSession.id;
    const results = await Promise.all(
      Array.from({ length: 104 }, () =>
        gql<{ createShareLink: { id: string } }, unknown>(app, SHARE, { input: { sessionId: id } }, { apiKey: API_KEYS.alpha }),
      ),
    );
    const made = results.filter((r) => r.data?.createShareLink);
    const refused = results.filter((r) => r.errors?.length);
    expect(made.length).toBe(100);
    expect(refused.map((r) => r.errors?.[0]?.extensions?.code)).toEqual([
      'BAD_USER_INPUT',
      'BAD_USER_INPUT',
      'BAD_USER_INPUT',
      'BAD_USER_INPUT',
    ]);
    expect(refused[0].errors?.[0]?.message).toMatch(/at most 100/);
    const listed = (await gqlOk(app, LINKS, { id }, { apiKey: API_KEYS.alpha })) as { session: { shareLinks: { totalCount: number } } };
    expect(listed.session.shareLinks.totalCount).toBe(100);
    // A revoked link no longer counts.
    const first = made[0].data!.createShareLink;
    await gqlOk(app, REVOKE, { input: { id: first.id } }, { apiKey: API_KEYS.alpha });
    await share(id);
  });

  it("a token of workspace beta never sees workspace alpha's sessions", async () => {
    const link = await share(C, undefined, API_KEYS.beta);
    expect(((await gqlOk(app, READ, { id: C }, { apiKey: link.token })) as Read).session?.messageCount).toBe(1);
    for (const id of [A, F, B]) expect(((await gqlOk(app, READ, { id }, { apiKey: link.token })) as Read).session).toBeNull();
  });

  it('with TRUSTED_DOCUMENTS: a listed document runs with a share token, and still cannot leave the session', async () => {
    const manifest = join(mkdtempSync(join(tmpdir(), 'share-links-')), 'trusted.json');
    writeFileSync(
      manifest,
      JSON.stringify({
        read: 'query ($id: ID!) { session(id: $id) { title } }',
        away: 'query ($id: ID!) { session(id: $id) { root { title } } }',
        list: 'query { sessions(first: 5) { edges { node { title } } } }',
        create: 'mutation ($input: CreateShareLinkInput!) { createShareLink(input: $input) { token } }',
        start: 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id } }',
      }),
    );
    const trusted = await createTestApp({ apiKeys: TWO_WORKSPACES, config: { trustedDocuments: manifest, graphiql: false } });
    try {
      type Answer = {
        data?: Record<string, { id?: string; title?: string; token?: string } | null>;
        errors?: { extensions?: { code?: string } }[];
      };
      const post = async (documentId: string, variables: Record<string, unknown>, key: string) => {
        const response = await fetch(trusted.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ documentId, variables }),
        });
        return (await response.json()) as Answer;
      };
      const made = await post('start', { input: { title: 'trusted shared' } }, API_KEYS.alpha);
      const id = made.data!.createSession!.id!;
      const link = await post('create', { input: { sessionId: id } }, API_KEYS.alpha);
      const token = link.data!.createShareLink!.token!;
      expect((await post('read', { id }, token)).data?.session?.title).toBe('trusted shared');
      expect((await post('away', { id }, token)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await post('list', {}, token)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await post('create', { input: { sessionId: id } }, token)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    } finally {
      await trusted.close();
    }
  });

  it.runIf(backend.postgresUrl)('a link revoked on one instance is refused on another within the key cache TTL', async () => {
    const second = await createTestApp({
      apiKeys: TWO_WORKSPACES,
      shareWith: app,
      config: { caches: { ...app.runtime.config.caches, apiKeyTtlMs: 500 } },
    });
    try {
      const link = await share(F);
      expect(((await gqlOk(second, READ, { id: F }, { apiKey: link.token })) as Read).session?.id).toBe(F);
      await gqlOk(app, REVOKE, { input: { id: link.id } }, { apiKey: API_KEYS.alpha });
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect((await gqlError(second, READ, { id: F }, { apiKey: link.token })).code).toBe('UNAUTHENTICATED');
    } finally {
      await second.close();
    }
  });
});
