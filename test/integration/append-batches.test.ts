import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { appendMessageBatch, batchInput } from '../../src/db/stores/append.js';
import { readEventsAfter } from '../../src/db/stores/events.js';
import { contentColumns } from '../../src/db/stores/messages.js';
import type { SqlClient } from '../../src/db/sql.js';
import type { SessionEventMessage } from '../../src/pubsub/bus.js';
import { API_KEYS, backend, gql, gqlOk, rawIdOf, type TestApp, useTestApp, TWO_WORKSPACES } from '../helpers/app.js';
import { AppendMessages, CreateSession, SessionMessages } from '../helpers/documents.js';

/**
 * Plain appends that arrive together are written together (src/services/append-batcher.ts): many
 * calls, to one session or several, of two workspaces, with unknown sessions among them, must each
 * get exactly what they would have got alone.
 */
let app: TestApp;
const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };

useTestApp(
  (built) => {
    app = built;
  },
  {
    apiKeys: TWO_WORKSPACES,
  },
);

async function newSession(title: string, as = alpha) {
  return (await gqlOk(app, CreateSession, { input: { title } }, as)).createSession.id;
}

async function allMessages(id: string, as = alpha) {
  const page = await gqlOk(app, SessionMessages, { id, first: 200 }, as);
  return { count: page.session!.messageCount, nodes: page.session!.messages.edges.map((e) => e.node) };
}

/** Collects what the bus publishes for `sessionIds` until `until` holds. */
function listen(sessionIds: string[]) {
  const heard = new Map<string, SessionEventMessage[]>(sessionIds.map((id) => [id, []]));
  const stops = sessionIds.map((id) => app.runtime.bus.subscribe(id, { event: (e) => heard.get(id)!.push(e), sync: () => {} }));
  return {
    heard,
    async until(done: () => boolean) {
      for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 25));
      for (const stop of stops) stop();
    },
  };
}

describe(`batched appends (${backend.label})`, () => {
  it('gives every call of a batch its own dense, ordered positions and events, per session and workspace', async () => {
    const sessions = [await newSession('A'), await newSession('B'), await newSession('C')];
    const betaSession = await newSession('beta', beta);
    const raw = [...sessions, betaSession].map((id) => rawIdOf(id));
    // Redis delivers asynchronously: subscribe first (the SUBSCRIBE must be confirmed before the writes).
    const bus = listen(raw);
    await new Promise((r) => setTimeout(r, 200));
    const calls = 8;
    const appends = sessions.flatMap((sessionId, s) =>
      Array.from({ length: calls }, (_, c) =>
        gqlOk(
          app,
          AppendMessages,
          {
            input: {
              sessionId,
              messages: [
                { role: 'USER', text: `s${s} c${c} a` },
                { role: 'ASSISTANT', text: `s${s} c${c} b`, agentId: c % 2 ? 'odd' : null },
              ],
            },
          },
          alpha,
        ),
      ),
    );
    // In the same batches: calls that must not append (another workspace's session, an unknown one)
    // and a call of the other workspace.
    const refused = [
      gql(app, AppendMessages, { input: { sessionId: sessions[0], messages: [{ role: 'USER', text: 'intruder' }] } }, beta),
      gql(app, AppendMessages, { input: { sessionId: betaSession, messages: [{ role: 'USER', text: 'wrong key' }] } }, alpha),
    ];
    const betaAppend = gqlOk(app, AppendMessages, { input: { sessionId: betaSession, messages: [{ role: 'USER', text: 'mine' }] } }, beta);
    const results = await Promise.all(appends);
    for (const result of await Promise.all(refused)) expect(result.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await betaAppend).appendMessages.messages.map((m) => [m.index, m.text])).toEqual([[0, 'mine']]);
    // Fewer statements than calls: they were batched (the in-process app sends them in one event-loop tick).
    for (const [s, sessionId] of sessions.entries()) {
      const mine = results.slice(s * calls, (s + 1) * calls).map((r) => r.appendMessages);
      const { count, nodes } = await allMessages(sessionId);
      expect(count).toBe(calls * 2);
      expect(nodes.map((n) => n.index)).toEqual(Array.from({ length: calls * 2 }, (_, i) => i));
      for (const result of mine) {
        // Each call's messages are adjacent, in its order, and what it answered is what was stored.
        const [a, b] = result.messages;
        expect(b.index).toBe(a.index + 1);
        expect(nodes[a.index]).toMatchObject({ id: a.id, text: a.text, role: 'USER' });
        expect(nodes[b.index]).toMatchObject({ id: b.id, text: b.text, role: 'ASSISTANT' });
        expect(a.text.replace(/ a$/, ' b')).toBe(b.text);
        // The session as this call left it: its own messages are the last ones.
        expect(result.session.messageCount).toBe(b.index + 1);
      }
    }
    expect((await allMessages(betaSession, beta)).count).toBe(1);

    // The log: one MESSAGE_ADDED per message, dense sequences, index order; the bus carried the same.
    for (const id of raw) {
      const log = await readEventsAfter(app.runtime.db.sql, id, 0, null, 1000);
      const added = log.filter((e) => e.type === 'MESSAGE_ADDED');
      expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
      expect(added.map((e) => (e.payload as { index: number }).index)).toEqual(added.map((_, i) => i));
    }
    await bus.until(() => raw.every((id, i) => bus.heard.get(id)!.length === (i < 3 ? calls * 2 : 1)));
    for (const id of raw) {
      const log = await readEventsAfter(app.runtime.db.sql, id, 0, null, 1000);
      const heard = bus.heard.get(id)!;
      expect(heard.map((e) => [e.id, e.sequence, e.type, e.messageId, e.payload])).toEqual(
        log.filter((e) => e.type === 'MESSAGE_ADDED').map((e) => [e.id, e.sequence, e.type, e.messageId, e.payload]),
      );
      // Published in sequence order.
      expect(heard.map((e) => e.sequence)).toEqual([...heard.map((e) => e.sequence)].sort((x, y) => x - y));
    }
  });

  it('writes calls that arrive together in fewer statements than calls', async () => {
    const sessions = await Promise.all(Array.from({ length: 10 }, (_, i) => newSession(`few ${i}`)));
    const counter = app.runtime.db.queries;
    counter.reset();
    await Promise.all(
      sessions.map((sessionId) => gqlOk(app, AppendMessages, { input: { sessionId, messages: [{ role: 'USER', text: 'hi' }] } }, alpha)),
    );
    expect(counter.count).toBeLessThan(sessions.length);
    for (const sessionId of sessions) expect((await allMessages(sessionId)).count).toBe(1);
  });

  it('sends a call alone as one statement: the single-call one on PGlite, the batched one on PostgreSQL', async () => {
    const sessionId = await newSession('alone');
    const counter = app.runtime.db.queries;
    counter.reset();
    const appended = await gqlOk(app, AppendMessages, { input: { sessionId, messages: [{ role: 'USER', text: 'alone' }] } }, alpha);
    expect(appended.appendMessages.messages.map((m) => [m.index, m.text])).toEqual([[0, 'alone']]);
    const writes = counter.statements.filter((text) => text.includes('INSERT INTO "Message"'));
    expect(writes).toHaveLength(1);
    // PGlite is one connection: no lock can be held elsewhere, so nothing is gained by skipping one.
    expect(writes[0].includes('jsonb_to_recordset')).toBe(!app.runtime.db.sql.oneConnection);
    expect(app.runtime.db.sql.oneConnection).toBe(!backend.postgresUrl);
    // Another workspace's session is still not found, and nothing is written to it.
    const unknown = await gql(app, AppendMessages, { input: { sessionId, messages: [{ role: 'USER', text: 'intruder' }] } }, beta);
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await allMessages(sessionId)).count).toBe(1);
  });

  it.skipIf(!backend.postgresUrl)('does not hold a batch behind a session another transaction has locked', async () => {
    const held = await newSession('held');
    const free = await newSession('free');
    let release!: () => void;
    const locked = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding!: () => void;
    const isHeld = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const transaction = app.runtime.db.sql.transaction(async (sql) => {
      await sql.query('SELECT id FROM "Session" WHERE id = $1 FOR UPDATE', [rawIdOf(held)]);
      holding();
      await locked;
    });
    await isHeld;
    const waiting = gqlOk(app, AppendMessages, { input: { sessionId: held, messages: [{ role: 'USER', text: 'waits' }] } }, alpha);
    const passing = gqlOk(app, AppendMessages, { input: { sessionId: free, messages: [{ role: 'USER', text: 'passes' }] } }, alpha);
    expect((await passing).appendMessages.messages[0].index).toBe(0);
    let done = false;
    void waiting.then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(done).toBe(false);
    release();
    await transaction;
    expect((await waiting).appendMessages.messages.map((m) => [m.index, m.text])).toEqual([[0, 'waits']]);
  });

  it('reads only the sessions it appends to, however many the workspace holds', async () => {
    // Before: the statement found its sessions by joining every root session of the database (the
    // planner's pick with no statistics on them), so each append grew with the session count:
    // 0.9 ms with 100 sessions, 7.4 ms with 5,000 on PGlite, on the request thread.
    const sessionId = rawIdOf(await newSession('among many'));
    const { sql } = app.runtime.db;
    const [{ workspaceId }] = await sql.query<{ workspaceId: string }>('SELECT "workspaceId" FROM "Session" WHERE id = $1', [sessionId]);
    await sql.query(
      `INSERT INTO "Session" (id, "workspaceId", title, "rootId", "updatedAt")
       SELECT $2 || '-' || g, $1, 'bulk', $2 || '-' || g, now() FROM generate_series(1, 5000) AS g`,
      [workspaceId, `bulk-${sessionId}`],
    );
    const plans: PlanNode[] = [];
    const explaining: SqlClient = {
      ...sql,
      query: async <T>(text: string, values?: readonly unknown[]) => {
        const [row] = await sql.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
        plans.push(row['QUERY PLAN'][0].Plan);
        return [] as T[];
      },
    };
    const message = {
      id: randomUUID(),
      eventId: randomUUID(),
      role: 'USER' as const,
      content: contentColumns([{ type: 'text', text: 'one of many' }], false, app.runtime.precount),
      agentId: null,
      createdAt: new Date(),
    };
    await appendMessageBatch(explaining, batchInput({ workspaceId, sessionId, messages: [message] }, 0), new Date());
    expect(plans).toHaveLength(1);
    const sessionReads = nodes(plans[0])
      .filter((node) => node['Relation Name'] === 'Session')
      .map((node) => (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']);
    expect(sessionReads.length).toBeGreaterThan(0);
    // Each read finds its row by the primary key, whatever the statistics (none yet on these rows).
    expect(Math.max(...sessionReads)).toBeLessThanOrEqual(10);
    // EXPLAIN ANALYZE ran it: the message is there.
    const [after] = await sql.query<{ messageCount: number }>('SELECT "messageCount" FROM "Session" WHERE id = $1', [sessionId]);
    expect(after.messageCount).toBe(1);
  });
});

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}
