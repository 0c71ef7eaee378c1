import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import { readEventsAfter } from '../../src/db/stores/events.js';
import { backend, createTestApp, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';

// A log bounded per message (issue 36): a finished streamed message's updates fold into one row
// per log, while live and replayed streams stay the same events with the same sequences.

const CREATE = `mutation Create($input: CreateSessionInput!) { createSession(input: $input) { id } }`;
const START = `mutation Start($input: StartTurnInput!) { startTurn(input: $input) { id } }`;
const REPORT = `mutation Report($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;
const APPEND = `mutation Append($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }`;
const UPDATE = `mutation Update($input: UpdateMessageInput!) { updateMessage(input: $input) { id generating } }`;
const EVENT_FIELDS = `
    __typename
    sequence
    at
    ... on MessageAdded { index message { id } }
    ... on MessageUpdated { appendText finished message { id } }
    ... on TurnUsageUpdated { delta { inputTokens } total { inputTokens } }
    ... on TurnStarted { turn { id } }`;
const EVENTS = `subscription Events($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    ${EVENT_FIELDS}
    ... on SubSessionEvent { subSessionId turn { id } event { ${EVENT_FIELDS} } }
  }
}`;

type Ev = { sequence: number; __typename: string } & Record<string, unknown>;
const pick = (data: Record<string, unknown>) => data.sessionEvents as Ev;

let app: TestApp;
let client: Client;
useTestApp((built) => {
  app = built;
});
beforeAll(() => {
  client = wsClient(app.url);
});
afterAll(async () => {
  await client?.dispose();
});

const gq = <T>(document: string, variables: Record<string, unknown>) => gqlOk<T, unknown>(app, document, variables);
const createSession = async (input: Record<string, unknown>) =>
  (await gq<{ createSession: { id: string } }>(CREATE, { input })).createSession.id;
const startTurn = async (sessionId: string) =>
  (await gq<{ startTurn: { id: string } }>(START, { input: { sessionId, agentIds: ['lead'] } })).startTurn.id;
const report = (turnId: string, inputTokens: number) => gq(REPORT, { input: { turnId, agentId: 'lead', inputTokens, outputTokens: 1 } });
async function generating(sessionId: string, turnId?: string) {
  const input = { sessionId, turnId, messages: [{ role: 'ASSISTANT', text: '', generating: true }] };
  return (await gq<{ appendMessages: { messages: { id: string }[] } }>(APPEND, { input })).appendMessages.messages[0].id;
}
const delta = (messageId: string, appendText: string) => gq(UPDATE, { input: { messageId, appendText } });
const finish = (messageId: string) => gq(UPDATE, { input: { messageId, generating: false } });

/** The log rows of a session, as stored (a folded row is one). */
const rowsOf = (sessionId: string) =>
  app.runtime.db.prisma.sessionEvent.findMany({ where: { sessionId: rawIdOf(sessionId) }, orderBy: { sequence: 'asc' } });
const currentSequence = async (sessionId: string) =>
  (await app.runtime.db.prisma.session.findUniqueOrThrow({ where: { id: rawIdOf(sessionId) } })).eventSequence;

/** Every event of the session after `after`, replayed over WebSocket, up to its current sequence. */
async function replay(sessionId: string, after: number, last: number) {
  const sub = subscribeWs(client, EVENTS, { id: sessionId, after }, pick);
  try {
    return [...(await sub.collector.until((e) => e.at(-1)?.sequence === last, 20_000, `replay after ${after} to ${last}`))];
  } finally {
    sub.unsubscribe();
  }
}

/** The sequences 1..n in order: what a gapless log replayed from 0 holds. */
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe(`a log bounded per message (${backend.label})`, () => {
  it('folds a reply streamed in many deltas, interleaved with other events, into two rows; live and replayed streams are the same events', async () => {
    const id = await createSession({ title: 'fold', messages: [{ role: 'USER', text: 'go' }] });
    const live = subscribeWs(client, EVENTS, { id, after: 0 }, pick);
    const turnId = await startTurn(id);
    const reply = await generating(id, turnId);
    const pieces: string[] = [];
    let other: string | undefined;
    for (let i = 0; i < 150; i++) {
      pieces.push(`w${i} `);
      await delta(reply, `w${i} `);
      if (i === 20) await report(turnId, 7);
      if (i === 40) other = await generating(id, turnId);
      if (i > 40 && i % 10 === 0) await delta(other!, `o${i}`);
    }
    await finish(reply);
    const last = await currentSequence(id);

    // The reply's rows: its MESSAGE_ADDED and one folded row, however many deltas it had.
    const rows = await rowsOf(id);
    const replyRows = rows.filter((r) => r.messageId === rawIdOf(reply));
    expect(replyRows.length).toBe(2);
    expect(replyRows.map((r) => r.type)).toEqual(['MESSAGE_ADDED', 'MESSAGE_UPDATED']);
    expect(replyRows[1].lastSequence).toBe(last);
    // The other message is not finished: its rows stay one per event, between the folded row's sequences.
    expect(rows.filter((r) => r.messageId === rawIdOf(other!)).length).toBe(1 + 10);

    const streamed = await live.collector.until((e) => e.at(-1)?.sequence === last, 20_000, 'the live events');
    live.unsubscribe();
    expect(streamed.map((e) => e.sequence)).toEqual(oneTo(last));
    const updates = streamed.filter((e) => e.__typename === 'MessageUpdated' && (e.message as { id: string }).id === reply);
    expect(updates.map((e) => e.appendText)).toEqual([...pieces, null]);
    expect(updates.at(-1)!.finished).toBe(true);

    // Replayed after the fold, over WebSocket and SSE: the same events, field for field.
    expect(await replay(id, 0, last)).toEqual(streamed);
    const sse = subscribeSse(app.yoga.fetch as never, EVENTS, { id, after: 0 }, pick);
    expect(await sse.collector.until((e) => e.at(-1)?.sequence === last, 20_000, 'the SSE replay')).toEqual(streamed);
    sse.unsubscribe();

    // From inside the folded range: after a delta, after the usage report between two deltas,
    // after the other message's delta, and right before the finish.
    const usage = streamed.find((e) => e.__typename === 'TurnUsageUpdated')!.sequence;
    const otherDelta = streamed.find((e) => e.__typename === 'MessageUpdated' && (e.message as { id: string }).id === other)!.sequence;
    for (const after of [updates[0].sequence, updates[57].sequence, usage, otherDelta, last - 1]) {
      expect(await replay(id, after, last)).toEqual(streamed.filter((e) => e.sequence > after));
    }

    // A replay that then goes live: the other message's next delta and finish follow the folded range.
    const resumed = subscribeWs(client, EVENTS, { id, after: updates[100].sequence }, pick);
    await delta(other!, 'end');
    await finish(other!);
    const tail = await resumed.collector.until((e) => e.at(-1)?.sequence === last + 2, 20_000, 'the tail');
    resumed.unsubscribe();
    expect(tail.map((e) => e.sequence)).toEqual(oneTo(last + 2).slice(updates[100].sequence));
    expect(tail.slice(0, -2)).toEqual(streamed.filter((e) => e.sequence > updates[100].sequence));
    expect((await rowsOf(id)).filter((r) => r.messageId === rawIdOf(other!)).length).toBe(2);
  });

  it('pages through folded rows: every page is a gapless run, a fold between two pages loses and repeats nothing', async () => {
    const id = await createSession({ title: 'pages' });
    const turnId = await startTurn(id);
    const a = await generating(id, turnId);
    const b = await generating(id, turnId);
    for (let i = 0; i < 30; i++) {
      await delta(i % 3 === 0 ? b : a, `x${i}`);
      if (i % 7 === 0) await report(turnId, i + 1);
    }
    const sql = app.runtime.db.sql;
    const raw = rawIdOf(id);
    const before = await readEventsAfter(sql, raw, 0, null, 1_000);
    expect(before.map((e) => e.sequence)).toEqual(oneTo(before.length));

    // Pages of 4 from 0: the first two before the messages finish, the rest after both folds.
    const paged: typeof before = [];
    for (let page = 0; ; page++) {
      if (page === 2) {
        await finish(a);
        await finish(b);
      }
      const after = paged.at(-1)?.sequence ?? 0;
      const events = await readEventsAfter(sql, raw, after, null, 4);
      if (events.length === 0) break;
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => after + 1 + i));
      paged.push(...events);
    }
    const all = await readEventsAfter(sql, raw, 0, null, 1_000);
    expect(paged).toEqual(all);
    // The folded events are the stored ones, as they were before the fold (ids, times, payloads).
    expect(all.slice(0, before.length)).toEqual(before);
    expect((await rowsOf(id)).filter((r) => r.messageId === rawIdOf(a)).length).toBe(2);
    // Bounded reads (a live stream's gap fill) from inside a folded range.
    for (const [after, upTo] of [
      [3, 9],
      [5, 6],
      [10, 30],
    ]) {
      const events = await readEventsAfter(sql, raw, after, upTo, 1_000);
      expect(events).toEqual(all.filter((e) => e.sequence > after && e.sequence <= upTo));
    }
  });

  it('replays racing the finish see every event once', async () => {
    const id = await createSession({ title: 'race' });
    const reply = await generating(id);
    for (let i = 0; i < 60; i++) await delta(reply, `r${i}`);
    const before = await currentSequence(id);
    const last = before + 1;
    const replays = [0, 1, 2, 3].map((k) => subscribeWs(client, EVENTS, { id, after: k * 15 }, pick));
    const sses = [0, 30].map((after) => subscribeSse(app.yoga.fetch as never, EVENTS, { id, after }, pick));
    await finish(reply);
    const reference = await replay(id, 0, last);
    expect(reference.map((e) => e.sequence)).toEqual(oneTo(last));
    for (const [k, r] of replays.entries()) {
      const got = await r.collector.until((e) => e.at(-1)?.sequence === last, 20_000, `race replay ${k}`);
      r.unsubscribe();
      expect(got).toEqual(reference.slice(k * 15));
    }
    for (const [k, r] of sses.entries()) {
      const got = await r.collector.until((e) => e.at(-1)?.sequence === last, 20_000, `race SSE replay ${k}`);
      r.unsubscribe();
      expect(got).toEqual(reference.slice(k * 30));
    }
    expect((await rowsOf(id)).length).toBe(2);
  });

  it("folds a sub-session's streamed message in its own log and in the log above it", async () => {
    const parentId = await createSession({ title: 'lead', messages: [{ role: 'USER', text: 'plan' }] });
    const turnId = await startTurn(parentId);
    const sub = await createSession({ title: 'researcher', parentTurnId: turnId, agentId: 'researcher' });
    const live = subscribeWs(client, EVENTS, { id: parentId, after: 0 }, pick);
    const reply = await generating(sub);
    for (let i = 0; i < 40; i++) {
      await delta(reply, `s${i}`);
      if (i === 10) await report(turnId, 3);
    }
    await finish(reply);
    const last = await currentSequence(parentId);

    expect((await rowsOf(sub)).filter((r) => r.messageId === rawIdOf(reply)).length).toBe(2);
    const wrappers = (await rowsOf(parentId)).filter((r) => r.messageId === rawIdOf(reply));
    expect(wrappers.map((r) => r.type)).toEqual(['SUB_SESSION_EVENT', 'SUB_SESSION_EVENT']);

    const streamed = await live.collector.until((e) => e.at(-1)?.sequence === last, 20_000, 'the live wrappers');
    live.unsubscribe();
    expect(streamed.map((e) => e.sequence)).toEqual(oneTo(last));
    const inner = streamed.filter((e) => e.__typename === 'SubSessionEvent').map((e) => e.event as Ev);
    expect(inner.filter((e) => e.__typename === 'MessageUpdated').length).toBe(41);
    expect(await replay(parentId, 0, last)).toEqual(streamed);
    const middle = streamed[Math.floor(streamed.length / 2)].sequence;
    expect(await replay(parentId, middle, last)).toEqual(streamed.filter((e) => e.sequence > middle));
    // The sub-session's own stream replays the same way.
    const subLast = await currentSequence(sub);
    expect((await replay(sub, 0, subLast)).map((e) => e.sequence)).toEqual(oneTo(subLast));
  });
  it.runIf(backend.postgresUrl)(
    'two instances: a replay on one while the other folds sees the same events as a live stream there',
    async () => {
      const other = await createTestApp({ shareWith: app });
      const otherClient = wsClient(other.url);
      try {
        const id = await createSession({ title: 'two instances' });
        const watched = subscribeWs(otherClient, EVENTS, { id, after: 0 }, pick);
        const reply = await generating(id);
        for (let i = 0; i < 80; i++) await delta(reply, `t${i}`);
        const last = (await currentSequence(id)) + 1;
        const racing = [0, 40, 79].map((after) => ({ after, sub: subscribeWs(otherClient, EVENTS, { id, after }, pick) }));
        await finish(reply);
        const streamed = await watched.collector.until((e) => e.at(-1)?.sequence === last, 20_000, 'the other instance live');
        watched.unsubscribe();
        expect(streamed.map((e) => e.sequence)).toEqual(oneTo(last));
        for (const { after, sub } of racing) {
          const got = await sub.collector.until((e) => e.at(-1)?.sequence === last, 20_000, `replay after ${after} there`);
          sub.unsubscribe();
          expect(got).toEqual(streamed.slice(after));
        }
        expect((await rowsOf(id)).length).toBe(2);
      } finally {
        await otherClient.dispose();
        await other.close();
      }
    },
  );
});

describe(`a log bounded per message, under retention (${backend.label})`, () => {
  const RETENTION_MS = 60_000;
  let retained: TestApp;
  useTestApp(
    (built) => {
      retained = built;
    },
    { config: { eventRetentionMs: RETENTION_MS } },
  );

  it('sweeps a folded row whole with everything at or below its range; what is kept replays gaplessly', async () => {
    const retention = retained.runtime.retention!;
    await retention.stop();
    const call = <T>(document: string, variables: Record<string, unknown>) => gqlOk<T, unknown>(retained, document, variables);
    const id = (await call<{ createSession: { id: string } }>(CREATE, { input: { title: 'swept' } })).createSession.id;
    const turnId = (await call<{ startTurn: { id: string } }>(START, { input: { sessionId: id, agentIds: ['lead'] } })).startTurn.id;
    const input = { sessionId: id, turnId, messages: [{ role: 'ASSISTANT', text: '', generating: true }] };
    const reply = (await call<{ appendMessages: { messages: { id: string }[] } }>(APPEND, { input })).appendMessages.messages[0].id;
    for (let i = 0; i < 5; i++) await call(UPDATE, { input: { messageId: reply, appendText: `old${i}` } });
    // An event between the reply's deltas, old enough to be swept, while the reply finishes later.
    await call(REPORT, { input: { turnId, agentId: 'lead', inputTokens: 1, outputTokens: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cut = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; i < 5; i++) {
      await call(UPDATE, { input: { messageId: reply, appendText: `new${i}` } });
      // A new event inside the folded range: it may not outlive the folded row's older events.
      if (i === 2) await call(REPORT, { input: { turnId, agentId: 'lead', inputTokens: 5, outputTokens: 1 } });
    }
    await call(UPDATE, { input: { messageId: reply, generating: false } });
    const folded = await retained.runtime.db.prisma.sessionEvent.findFirstOrThrow({
      where: { sessionId: rawIdOf(id), lastSequence: { not: null } },
    });
    await call(REPORT, { input: { turnId, agentId: 'lead', inputTokens: 2, outputTokens: 1 } });

    await Promise.all([retention.sweep(cut + RETENTION_MS), retention.sweep(cut + RETENTION_MS)]);
    // The usage report inside the folded range was old: the folded row went with it, whole, and
    // with it the newer report inside its range.
    const kept = await retained.runtime.db.prisma.sessionEvent.findMany({
      where: { sessionId: rawIdOf(id) },
      orderBy: { sequence: 'asc' },
    });
    expect(kept.map((r) => r.sequence)).toEqual([folded.lastSequence! + 1]);

    const sub = subscribeSse(retained.yoga.fetch as never, EVENTS, { id, after: folded.lastSequence }, pick);
    const events = await sub.collector.until((e) => e.length >= 1, 10_000, 'the kept event');
    sub.unsubscribe();
    expect(events.map((e) => e.__typename)).toEqual(['TurnUsageUpdated']);
    const refused = subscribeSse(retained.yoga.fetch as never, EVENTS, { id, after: folded.sequence }, pick);
    await expect(refused.collector.until(() => false, 10_000, 'a refusal')).rejects.toThrow(/EVENTS_EXPIRED/);
    refused.unsubscribe();
  });
});
