import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, gql, gqlOk, type TestApp } from '../helpers/app.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

/**
 * Read replicas over HTTP and WebSocket, against a real streaming replica: scripts/pg-replica.sh up
 * (a primary on 5441, its replica on 5442), then TEST_PRIMARY_URL and TEST_REPLICA_URLS naming
 * their admin databases (.ci/run does both). Skipped without them.
 */
const primaryAdmin = process.env.TEST_PRIMARY_URL || null;
const replicaAdmins = (process.env.TEST_REPLICA_URLS ?? '').split(',').filter(Boolean);
const script = fileURLToPath(new URL('../../scripts/pg-replica.sh', import.meta.url));

const RENAME = 'mutation Rename($id: ID!, $title: String!) { updateSession(input: { sessionId: $id, title: $title }) { id title } }';
const TITLE = 'query Title($id: ID!) { node(id: $id) { ... on Session { title } } }';
const TITLE_AND_COUNT = 'query TitleAndCount($id: ID!) { node(id: $id) { ... on Session { title messageCount } } }';
const COUNT_MESSAGES = 'query Messages($id: ID!) { node(id: $id) { ... on Session { messageCount } } }';
const APPEND =
  'mutation Append($id: ID!, $text: String!) { appendMessages(input: { sessionId: $id, messages: [{ role: USER, text: $text }] }) { session { id } } }';
const COUNT = 'query Count { sessions(first: 1) { totalCount } }';

const withDatabase = (url: string, name: string) => {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
};

async function onEach(urls: string[], sql: string) {
  for (const url of urls) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }
}

const scrape = async (app: TestApp) => (await fetch(app.url.replace(/\/graphql$/, '/metrics'))).text();
const statements = (text: string, target: string) =>
  Number(new RegExp(`^session_graph_database_queries_total\\{target="${target}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
const readyz = async (app: TestApp) => {
  const response = await fetch(app.url.replace(/\/graphql$/, '/readyz'));
  return { status: response.status, body: (await response.json()) as { status: string; replicas?: { status: string }[] } };
};
async function until(check: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!primaryAdmin || replicaAdmins.length === 0)('read replicas (PostgreSQL primary + streaming replica)', () => {
  const name = `sg_test_replica_${randomBytes(4).toString('hex')}`;
  let app: TestApp;
  let replicaUrls: string[];
  let sessionId: string;

  beforeAll(async () => {
    await onEach([primaryAdmin!], `CREATE DATABASE ${name}`);
    replicaUrls = replicaAdmins.map((url) => withDatabase(url, name));
    // The replica serves reads however far behind it falls, so that a stale read is possible: the
    // token, not the lag bound, is what keeps a client's reads after its writes.
    app = await createTestApp({
      databaseUrl: withDatabase(primaryAdmin!, name),
      config: { databaseReplicaUrls: replicaUrls, replicaMaxLagMs: 600_000 },
    });
    await until(async () => (await readyz(app)).body.status === 'ok');
    const created = await gql(app, 'mutation { createSession(input: { title: "first" }) { id } }');
    sessionId = (created.data as { createSession: { id: string } }).createSession.id;
  }, 60_000);

  afterAll(async () => {
    await onEach(replicaUrls, 'SELECT pg_wal_replay_resume()').catch(() => {});
    await app?.close();
    await onEach([primaryAdmin!], `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

  it('gives every mutation a consistency token, and a read without one is served by the replica', async () => {
    const renamed = await gql(app, RENAME, { id: sessionId, title: 'caught up' });
    const token = renamed.extensions?.consistencyToken as string;
    expect(token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    // Once the replica has replayed it, a read without a token is the replica's alone.
    await until(
      async () => (await gqlOk<{ node: { title: string } | null }, unknown>(app, TITLE, { id: sessionId })).node?.title === 'caught up',
    );
    const before = await scrape(app);
    expect((await gqlOk<{ sessions: { totalCount: number } }, unknown>(app, COUNT)).sessions.totalCount).toBe(1);
    const after = await scrape(app);
    expect(statements(after, 'replica')).toBeGreaterThan(statements(before, 'replica'));
    expect(statements(after, 'primary')).toBe(statements(before, 'primary'));
    // A token the replica has replayed: the replica serves that read too.
    await until(
      async () =>
        (await readyz(app)).body.status === 'ok' &&
        (await gqlOk<{ node: { title: string } }, unknown>(app, TITLE, { id: sessionId })).node.title === 'caught up',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const withToken = await scrape(app);
    const read = await gqlOk<{ node: { title: string } }, unknown>(
      app,
      TITLE,
      { id: sessionId },
      { headers: { 'x-consistency-token': token } },
    );
    expect(read.node.title).toBe('caught up');
    const afterToken = await scrape(app);
    expect(statements(afterToken, 'replica')).toBeGreaterThan(statements(withToken, 'replica'));
    expect(statements(afterToken, 'primary')).toBe(statements(withToken, 'primary'));
  });

  it('skips a replica that falls behind the lag bound: reads without a token come from the primary, /readyz says degraded with 200', async () => {
    // A second instance on the same primary and replica, with a 1-second bound.
    const bounded = await createTestApp({
      databaseUrl: withDatabase(primaryAdmin!, name),
      config: { databaseReplicaUrls: replicaUrls, replicaMaxLagMs: 1_000 },
    });
    await onEach(replicaUrls, 'SELECT pg_wal_replay_pause()');
    try {
      await gqlOk(bounded, RENAME, { id: sessionId, title: 'behind the bound' });
      await until(async () => (await readyz(bounded)).body.replicas?.[0].status === 'lagging');
      const ready = await readyz(bounded);
      expect(ready).toMatchObject({ status: 200, body: { status: 'degraded' } });
      const before = await scrape(bounded);
      expect((await gqlOk<{ node: { title: string } }, unknown>(bounded, TITLE, { id: sessionId })).node.title).toBe('behind the bound');
      const after = await scrape(bounded);
      expect(statements(after, 'replica')).toBe(statements(before, 'replica'));
      expect(statements(after, 'primary')).toBeGreaterThan(statements(before, 'primary'));
    } finally {
      await onEach(replicaUrls, 'SELECT pg_wal_replay_resume()');
      await bounded.close();
    }
    await until(async () => (await readyz(app)).body.status === 'ok');
  }, 60_000);

  it('reads its own write with the token, 200 times out of 200, while the replica replays nothing', async () => {
    await onEach(replicaUrls, 'SELECT pg_wal_replay_pause()');
    try {
      const stale = (await gqlOk<{ node: { title: string } }, unknown>(app, TITLE, { id: sessionId })).node.title;
      const { messageCount } = (await gqlOk<{ node: { messageCount: number } }, unknown>(app, COUNT_MESSAGES, { id: sessionId })).node;
      // Half renames (Prisma's update), half appends (one plain SQL statement); each read with its write's token.
      for (let i = 0; i < 200; i++) {
        const written =
          i % 2 === 0
            ? await gql(app, RENAME, { id: sessionId, title: `write ${i}` })
            : await gql(app, APPEND, { id: sessionId, text: `message ${i}` });
        expect(written.errors).toBeUndefined();
        const headers = { 'x-consistency-token': written.extensions?.consistencyToken as string };
        const read = await gqlOk<{ node: { title: string; messageCount: number } }, unknown>(
          app,
          TITLE_AND_COUNT,
          { id: sessionId },
          { headers },
        );
        expect(read.node).toEqual({ title: `write ${i - (i % 2)}`, messageCount: messageCount + (i + 1 - ((i + 1) % 2)) / 2 });
      }
      // Without the token the paused replica answers, with what it had: the token is what made the reads above right.
      expect((await gqlOk<{ node: { title: string } }, unknown>(app, TITLE, { id: sessionId })).node.title).toBe(stale);
      // Over WebSocket, the token of the connection.
      const written = await gql(app, RENAME, { id: sessionId, title: 'over the socket' });
      const client = wsClient(app.url, { consistencyToken: written.extensions?.consistencyToken });
      try {
        const result = await new Promise<Record<string, unknown>>((resolve, reject) =>
          client.subscribe(
            { query: TITLE, variables: { id: sessionId } },
            { next: (r) => resolve(r as Record<string, unknown>), error: reject, complete: () => {} },
          ),
        );
        expect(result).toEqual({ data: { node: { title: 'over the socket' } } });
      } finally {
        await client.dispose();
      }
    } finally {
      await onEach(replicaUrls, 'SELECT pg_wal_replay_resume()');
    }
  }, 60_000);

  it('keeps subscriptions on the primary: a session made and renamed while the replica replays nothing replays them all', async () => {
    await onEach(replicaUrls, 'SELECT pg_wal_replay_pause()');
    const client = wsClient(app.url);
    try {
      const created = await gqlOk<{ createSession: { id: string } }, unknown>(
        app,
        'mutation { createSession(input: { title: "new" }) { id } }',
      );
      for (let i = 0; i < 3; i++) await gqlOk(app, RENAME, { id: created.createSession.id, title: `renamed ${i}` });
      const { collector } = subscribeWs(
        client,
        'subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence } }',
        { id: created.createSession.id },
        (data) => (data.sessionEvents as { sequence: number }).sequence,
      );
      const sequences = await collector.until((events) => events.length >= 3, 10_000, 'the replayed events');
      expect(sequences.slice(-3)).toEqual([sequences.length - 2, sequences.length - 1, sequences.length]);
    } finally {
      await client.dispose();
      await onEach(replicaUrls, 'SELECT pg_wal_replay_resume()');
    }
  });

  it('refuses a malformed token with BAD_USER_INPUT, over HTTP and WebSocket', async () => {
    for (const token of ['nope', '0/XYZ', '1/2/3', 'A'.repeat(100)]) {
      const result = await gql(app, TITLE, { id: sessionId }, { headers: { 'x-consistency-token': token } });
      expect(result.status).toBe(200);
      expect(result.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(result.data).toBeUndefined();
    }
    const client = wsClient(app.url, { consistencyToken: 42 });
    try {
      const result = await new Promise<{ errors?: readonly { extensions?: { code?: string } }[] }>((resolve, reject) =>
        client.subscribe({ query: TITLE, variables: { id: sessionId } }, { next: resolve, error: reject, complete: () => {} }),
      );
      expect(result.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    } finally {
      await client.dispose();
    }
  });

  it('answers every request from the primary while the replica is stopped, and /readyz says degraded with 200', async () => {
    const sessions = (await gqlOk<{ sessions: { totalCount: number } }, unknown>(app, COUNT)).sessions.totalCount;
    execFileSync(script, ['stop-replica']);
    try {
      for (let i = 0; i < 50; i++) {
        const written = await gql(app, RENAME, { id: sessionId, title: `down ${i}` });
        expect(written.errors).toBeUndefined();
        const token = { 'x-consistency-token': written.extensions?.consistencyToken as string };
        const read = await gqlOk<{ node: { title: string } }, unknown>(app, TITLE, { id: sessionId }, { headers: i % 2 ? token : {} });
        expect(read.node.title).toBe(`down ${i}`);
        expect((await gqlOk<{ sessions: { totalCount: number } }, unknown>(app, COUNT)).sessions.totalCount).toBe(sessions);
      }
      const ready = await readyz(app);
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('degraded');
      expect(ready.body.replicas?.[0].status).toMatch(/^down: /);
      expect(await scrape(app)).toMatch(/^session_graph_replica_serving\{replica="0"\} 0$/m);
    } finally {
      execFileSync(script, ['start-replica']);
    }
    await until(async () => (await readyz(app)).body.status === 'ok', 30_000);
  }, 90_000);
});
