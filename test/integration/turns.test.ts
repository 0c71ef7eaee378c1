import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  backend,
  createTestApp,
  dropTestDatabases,
  globalIdOf,
  gql,
  gqlError,
  gqlOk,
  rawIdOf,
  type TestApp,
  useTestApp,
  TWO_WORKSPACES,
} from '../helpers/app.js';
import { AppendMessages, CreateSession, UpdateMessage } from '../helpers/documents.js';
import { subscribeSse, subscribeWs, wsClient } from '../helpers/subscriptions.js';
import {
  CancelTurn,
  CompleteAgent,
  DeleteSession,
  ForkSession,
  HeartbeatTurn,
  ReportUsage,
  SessionUsage,
  StartTurn,
  TurnDetails,
} from '../helpers/turn-documents.js';

const TURN_EVENTS = `
  subscription TurnEvents($id: ID!, $after: Int) {
    turnEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
      turn { id status }
      ... on TurnStarted { number agentIds }
      ... on TurnUsageUpdated { agentId model delta { inputTokens } total { inputTokens outputTokens } }
      ... on TurnAgentCompleted { agentId success error }
      ... on TurnFailed { cause error }
      ... on TurnCancelled { reason }
    }
  }`;

const SESSION_EVENTS = `
  subscription SessionEventsForTurns($id: ID!, $after: Int) {
    sessionEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
      ... on TurnStarted { number }
      ... on SessionDeleted { deletedSessionId }
    }
  }`;

type TurnEv = {
  __typename: string;
  sequence: number;
  turn: { id: string; status: string } | null;
  reason?: string;
  cause?: string;
  error?: string;
};

let app: TestApp;
useTestApp(
  (built) => {
    app = built;
  },
  {
    apiKeys: TWO_WORKSPACES,
  },
);
const auth = { apiKey: API_KEYS.alpha };

async function newSession(target: TestApp = app) {
  const data = await gqlOk(target, CreateSession, { input: { title: 'turns', messages: [{ role: 'USER', text: 'hello' }] } }, auth);
  return data.createSession.id;
}

async function start(sessionId: string, agentIds = ['a'], extra: { turnId?: string } = {}, target: TestApp = app) {
  const data = await gqlOk(target, StartTurn, { input: { sessionId, agentIds, initiator: { kind: 'USER', id: 'u1' }, ...extra } }, auth);
  return data.startTurn;
}

/** The types of a session's stored events, in sequence order. */
async function loggedTypes(target: TestApp, sessionGlobalId: string) {
  const rows = await target.runtime.db.prisma.sessionEvent.findMany({
    where: { sessionId: rawIdOf(sessionGlobalId) },
    orderBy: { sequence: 'asc' },
  });
  rows.forEach((row, i) => expect(row.sequence).toBe(i + 1));
  return rows.map((row) => row.type);
}

describe(`turn lifecycle (${backend.label})`, () => {
  it('numbers turns 1, 2, 3 per session, keeps one active, and returns the same turn for a repeated turnId', async () => {
    const sessionId = await newSession();
    const first = await start(sessionId, ['a'], { turnId: 'client-1' });
    expect(first).toMatchObject({
      number: 1,
      status: 'ACTIVE',
      initiator: { kind: 'USER', id: 'u1' },
      agents: [{ agentId: 'a', status: 'ACTIVE' }],
    });
    expect(await start(sessionId, ['a'], { turnId: 'client-1' })).toMatchObject({ id: first.id, number: 1 });

    const busy = await gqlError(app, StartTurn, { input: { sessionId, agentIds: ['a'] } }, auth);
    expect(busy.code).toBe('TURN_ALREADY_ACTIVE');
    expect(busy.message).toContain(sessionId);

    await gqlOk(app, CompleteAgent, { input: { turnId: first.id, agentId: 'a', success: true } }, auth);
    const second = await start(sessionId);
    expect(second.number).toBe(2);
    // The key of an ended turn still names it.
    expect(await start(sessionId, ['a'], { turnId: 'client-1' })).toMatchObject({ id: first.id, status: 'COMPLETED' });

    const read = await gqlOk(app, SessionUsage, { id: sessionId }, auth);
    expect(read.session?.activeTurn).toEqual({ id: second.id, number: 2 });
    expect(read.session?.turns.totalCount).toBe(2);
    expect(read.session?.turns.edges.map((e) => e.node)).toEqual([
      { number: 1, status: 'COMPLETED' },
      { number: 2, status: 'ACTIVE' },
    ]);
    expect(await loggedTypes(app, sessionId)).toEqual([
      'MESSAGE_ADDED',
      'TURN_STARTED',
      'TURN_AGENT_COMPLETED',
      'TURN_COMPLETED',
      'TURN_STARTED',
    ]);
  });

  it('refuses bad starts with the contract codes, writing nothing', async () => {
    const sessionId = await newSession();
    for (const agentIds of [[], ['a', 'a'], [''], Array.from({ length: 101 }, (_, i) => `a${i}`)]) {
      expect((await gqlError(app, StartTurn, { input: { sessionId, agentIds } }, auth)).code).toBe('BAD_USER_INPUT');
    }
    expect((await gqlError(app, StartTurn, { input: { sessionId, agentIds: ['a'] } }, { apiKey: API_KEYS.beta })).code).toBe('NOT_FOUND');
    const unknown = globalIdOf('Session', '01900000-0000-7000-8000-000000000000');
    expect((await gqlError(app, StartTurn, { input: { sessionId: unknown, agentIds: ['a'] } }, auth)).code).toBe('NOT_FOUND');
    expect(await loggedTypes(app, sessionId)).toEqual(['MESSAGE_ADDED']);
  });

  it('adds usage to the agent and the turn, ignores a repeated callId, keeps the model, and counts usage after the end', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a', 'b']);
    const report = (agentId: string, inputTokens: number, extra: Record<string, unknown> = {}) =>
      gqlOk(app, ReportUsage, { input: { turnId: turn.id, agentId, inputTokens, outputTokens: 1, cost: 0.5, ...extra } }, auth);
    await report('a', 10, { callId: 'c1', model: 'gpt-x', cacheReadTokens: 3, cacheWriteTokens: 2 });
    const repeated = await report('a', 10, { callId: 'c1', model: 'gpt-x', cacheReadTokens: 3, cacheWriteTokens: 2 });
    expect(repeated.reportUsage.usage).toEqual({
      inputTokens: 10,
      outputTokens: 1,
      cacheReadTokens: 3,
      cacheWriteTokens: 2,
      totalTokens: 16,
      cost: 0.5,
    });
    await report('b', 100, { model: 'claude-y' });
    await report('b', 1000);

    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'a', success: true } }, auth);
    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'b', success: true } }, auth);
    const late = await report('a', 5, { model: 'gpt-x' });
    expect(late.reportUsage.status).toBe('COMPLETED');
    expect(late.reportUsage.usage.inputTokens).toBe(1115);
    expect(late.reportUsage.agents).toEqual([
      { agentId: 'a', status: 'COMPLETED', error: null, usage: { inputTokens: 15, outputTokens: 2, totalTokens: 22, cost: 1 } },
      { agentId: 'b', status: 'COMPLETED', error: null, usage: { inputTokens: 1100, outputTokens: 2, totalTokens: 1102, cost: 1 } },
    ]);

    const details = await gqlOk(app, TurnDetails, { id: turn.id }, auth);
    expect(details.node).toMatchObject({
      usageByModel: [
        { model: 'claude-y', usage: { inputTokens: 100, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, cost: 0.5 } },
        { model: 'gpt-x', usage: { inputTokens: 15, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 2, cost: 1 } },
        { model: null, usage: { inputTokens: 1000, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, cost: 0.5 } },
      ],
    });
    const types = await loggedTypes(app, sessionId);
    expect(types.filter((t) => t === 'TURN_USAGE_UPDATED')).toHaveLength(4);
    expect(types.at(-1)).toBe('TURN_USAGE_UPDATED');
  });

  it('refuses negative, fractional, absurd counts and unknown agents with BAD_USER_INPUT, writing nothing', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a']);
    // Not whole or past 2^31 - 1: refused by GraphQL's Int coercion before any resolver runs.
    for (const input of [
      { agentId: 'a', outputTokens: 1.5 },
      { agentId: 'a', cacheReadTokens: 2 ** 31 + 1 },
    ]) {
      const error = await gqlError(app, ReportUsage, { input: { turnId: turn.id, ...input } as never }, auth);
      expect(error.message, JSON.stringify(input)).toMatch(/Int cannot represent/);
    }
    const bad: Record<string, unknown>[] = [
      { agentId: 'a', inputTokens: -1 },
      { agentId: 'a', cost: -0.01 },
      { agentId: 'nobody', inputTokens: 1 },
      { agentId: '', inputTokens: 1 },
      { agentId: 'a', inputTokens: 1, callId: '' },
    ];
    for (const input of bad) {
      const error = await gqlError(app, ReportUsage, { input: { turnId: turn.id, ...input } as never }, auth);
      expect(error.code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
    }
    // Two reports of 2^31 - 1 would take the total past what an Int can show.
    await gqlOk(app, ReportUsage, { input: { turnId: turn.id, agentId: 'a', inputTokens: 2 ** 31 - 1 } }, auth);
    expect((await gqlError(app, ReportUsage, { input: { turnId: turn.id, agentId: 'a', inputTokens: 1 } }, auth)).code).toBe(
      'BAD_USER_INPUT',
    );
    expect((await gqlError(app, ReportUsage, { input: { turnId: turn.id, agentId: 'a' } }, { apiKey: API_KEYS.beta })).code).toBe(
      'NOT_FOUND',
    );
    expect(await loggedTypes(app, sessionId)).toEqual(['MESSAGE_ADDED', 'TURN_STARTED', 'TURN_USAGE_UPDATED']);
  });

  it('fails the turn when any agent failed, keeping each error, and refuses completing or cancelling an ended turn', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a', 'b', 'c']);
    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'a', success: false, error: 'rate limited' } }, auth);
    const mid = await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'b', success: true } }, auth);
    expect(mid.completeAgent.status).toBe('ACTIVE');
    const end = await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'c', success: false, error: 'tool crashed' } }, auth);
    expect(end.completeAgent).toMatchObject({
      status: 'FAILED',
      error: 'agent a failed: rate limited; agent c failed: tool crashed',
      agents: [
        { agentId: 'a', status: 'FAILED', error: 'rate limited' },
        { agentId: 'b', status: 'COMPLETED', error: null },
        { agentId: 'c', status: 'FAILED', error: 'tool crashed' },
      ],
    });
    expect(end.completeAgent.completedAt).toBeTruthy();
    // The same completion again is a no-op that returns the turn; a contradicting one is refused.
    expect((await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'b', success: true } }, auth)).completeAgent).toEqual(
      end.completeAgent,
    );
    for (const [doc, input] of [
      [CompleteAgent, { turnId: turn.id, agentId: 'b', success: false }],
      [CancelTurn, { turnId: turn.id, reason: 'late' }],
      [HeartbeatTurn, { turnId: turn.id }],
    ] as const) {
      const error = await gqlError(app, doc as never, { input } as never, auth);
      expect(error.code).toBe('TURN_NOT_ACTIVE');
      expect(error.message).toContain(turn.id);
    }
    expect(await loggedTypes(app, sessionId)).toEqual([
      'MESSAGE_ADDED',
      'TURN_STARTED',
      'TURN_AGENT_COMPLETED',
      'TURN_AGENT_COMPLETED',
      'TURN_AGENT_COMPLETED',
      'TURN_FAILED',
    ]);
  });

  it('cancels an active turn with its reason, frees the session for the next turn, and a heartbeat keeps a turn active', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a', 'b']);
    expect((await gqlOk(app, HeartbeatTurn, { input: { turnId: turn.id } }, auth)).heartbeatTurn.status).toBe('ACTIVE');
    const cancelled = await gqlOk(app, CancelTurn, { input: { turnId: turn.id, reason: 'user pressed stop' } }, auth);
    expect(cancelled.cancelTurn).toMatchObject({
      status: 'CANCELLED',
      error: 'user pressed stop',
      agents: [
        { agentId: 'a', status: 'CANCELLED', error: null },
        { agentId: 'b', status: 'CANCELLED', error: null },
      ],
    });
    expect((await start(sessionId)).number).toBe(2);
  });

  it('ties messages to their turn, and refuses appending to an ended turn', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a']);
    await gqlOk(
      app,
      AppendMessages,
      { input: { sessionId, turnId: turn.id, agentId: 'a', messages: [{ role: 'ASSISTANT', text: 'answer' }] } },
      auth,
    );
    const details = await gqlOk(app, TurnDetails, { id: turn.id }, auth);
    expect(details.node).toMatchObject({
      messages: { totalCount: 1, edges: [{ node: { index: 1, text: 'answer', turn: { id: turn.id } } }] },
    });

    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'a', success: true } }, auth);
    const refused = await gqlError(
      app,
      AppendMessages,
      { input: { sessionId, turnId: turn.id, messages: [{ role: 'ASSISTANT', text: 'late' }] } },
      auth,
    );
    expect(refused.code).toBe('TURN_NOT_ACTIVE');
    expect(refused.message).toContain(turn.id);
  });

  it('counts a message appended to the turn and each update of its generating message as turn activity', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a']);
    const longAgo = new Date('2020-01-01T00:00:00Z');
    const activity = async () => {
      const row = await app.runtime.db.prisma.turn.findUniqueOrThrow({
        where: { id: rawIdOf(turn.id) },
        select: { lastActivityAt: true },
      });
      return row.lastActivityAt.getTime();
    };
    const age = () =>
      app.runtime.db.sql.query(`UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1`, [
        rawIdOf(turn.id),
        longAgo.toISOString(),
      ]);

    await age();
    const appended = await gqlOk(
      app,
      AppendMessages,
      { input: { sessionId, turnId: turn.id, messages: [{ role: 'ASSISTANT', text: 'stream', generating: true }] } },
      auth,
    );
    expect(await activity()).toBeGreaterThan(longAgo.getTime());
    await age();
    await gqlOk(app, UpdateMessage, { input: { messageId: appended.appendMessages.messages[0].id, appendText: ' more' } }, auth);
    expect(await activity()).toBeGreaterThan(longAgo.getTime());
  });

  it("sums a session's own turns in usage, the whole fork tree in treeUsage, and usage per model", async () => {
    const parent = await newSession();
    const t1 = await start(parent, ['a']);
    await gqlOk(
      app,
      ReportUsage,
      { input: { turnId: t1.id, agentId: 'a', inputTokens: 100, outputTokens: 10, model: 'm1', cost: 1 } },
      auth,
    );
    await gqlOk(
      app,
      AppendMessages,
      {
        input: {
          sessionId: parent,
          messages: [
            { role: 'ASSISTANT', text: 'hi' },
            { role: 'USER', text: 'again' },
          ],
        },
      },
      auth,
    );
    const fork = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 2 } }, auth)).forkSession.session.id;
    const t2 = await start(fork, ['a']);
    await gqlOk(
      app,
      ReportUsage,
      { input: { turnId: t2.id, agentId: 'a', inputTokens: 7, outputTokens: 3, model: 'm2', cost: 0.25 } },
      auth,
    );

    const forkRead = await gqlOk(app, SessionUsage, { id: fork }, auth);
    expect(forkRead.session?.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10, cost: 0.25 });
    expect(forkRead.session?.treeUsage).toEqual({ inputTokens: 107, totalTokens: 120 });
    expect(forkRead.session?.usageByModel).toEqual([{ model: 'm2', usage: { inputTokens: 7, outputTokens: 3, cost: 0.25 } }]);
    const parentRead = await gqlOk(app, SessionUsage, { id: parent }, auth);
    expect(parentRead.session?.usage).toEqual({ inputTokens: 100, outputTokens: 10, totalTokens: 110, cost: 1 });
    expect(parentRead.session?.treeUsage).toEqual({ inputTokens: 107, totalTokens: 120 });
  });
});

describe(`turns under concurrency (${backend.label})`, () => {
  it('50 parallel completeAgent calls over 5 agents end the turn exactly once', async () => {
    const sessionId = await newSession();
    const agents = ['a1', 'a2', 'a3', 'a4', 'a5'];
    const turn = await start(sessionId, agents);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        gql(app, CompleteAgent, { input: { turnId: turn.id, agentId: agents[i % 5], success: true } }, auth),
      ),
    );
    // Repeats are no-ops whenever they land, after the end too: none fails.
    expect(results.filter((result) => result.errors)).toEqual([]);
    expect(results.at(-1)!.data!.completeAgent.status).not.toBe('FAILED');
    const types = await loggedTypes(app, sessionId);
    expect(types.filter((t) => t === 'TURN_COMPLETED')).toHaveLength(1);
    expect(types.filter((t) => t === 'TURN_AGENT_COMPLETED')).toHaveLength(5);
    expect(types.at(-1)).toBe('TURN_COMPLETED');
  });

  it('1,000 parallel reportUsage calls with repeated callIds give exact totals', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a', 'b']);
    // 1,000 calls: 600 distinct callIds, 200 of them sent three times; 200 reports without a callId.
    const calls: Record<string, unknown>[] = [];
    for (let i = 0; i < 600; i++)
      calls.push({ callId: `call-${i}`, agentId: i % 2 ? 'a' : 'b', inputTokens: i + 1, outputTokens: 2, cost: 0.25 });
    for (let i = 0; i < 200; i++) calls.push({ ...calls[i * 3] });
    for (let i = 0; i < 200; i++) calls.push({ agentId: 'a', inputTokens: 1, outputTokens: 1, cost: 0.5, model: 'm' });
    const results = await Promise.all(calls.map((input) => gql(app, ReportUsage, { input: { turnId: turn.id, ...input } as never }, auth)));
    expect(results.filter((r) => r.errors)).toEqual([]);
    const expectedInput = (600 * 601) / 2 + 200;
    const details = await gqlOk(app, TurnDetails, { id: turn.id }, auth);
    expect(details.node).toMatchObject({ usage: { inputTokens: expectedInput, outputTokens: 1200 + 200, cost: 600 * 0.25 + 200 * 0.5 } });
    const agents = (details.node as { agents: { usage: { inputTokens: number } }[] }).agents;
    expect(agents[0].usage.inputTokens + agents[1].usage.inputTokens).toBe(expectedInput);
    expect((await loggedTypes(app, sessionId)).filter((t) => t === 'TURN_USAGE_UPDATED')).toHaveLength(800);
    // 1,000 requests through one in-process PGlite connection on a shared 2-core machine.
  }, 180_000);

  it('usage reports racing the completions and a cancel all count, and the turn ends once', async () => {
    const sessionId = await newSession();
    const turn = await start(sessionId, ['a', 'b', 'c']);
    const calls = [
      ...Array.from({ length: 150 }, (_, i) =>
        gql(app, ReportUsage, { input: { turnId: turn.id, agentId: ['a', 'b', 'c'][i % 3], callId: `r${i % 100}`, inputTokens: 2 } }, auth),
      ),
      ...['a', 'b', 'c', 'a', 'b', 'c'].map((agentId) =>
        gql(app, CompleteAgent, { input: { turnId: turn.id, agentId, success: true } }, auth),
      ),
      gql(app, CancelTurn, { input: { turnId: turn.id } }, auth),
    ];
    const results = await Promise.all(calls);
    for (const result of results) if (result.errors) expect(result.errors[0].extensions?.code).toBe('TURN_NOT_ACTIVE');
    const details = await gqlOk(app, TurnDetails, { id: turn.id }, auth);
    expect((details.node as { usage: { inputTokens: number } }).usage.inputTokens).toBe(200);
    const types = await loggedTypes(app, sessionId);
    expect(types.filter((t) => t === 'TURN_COMPLETED' || t === 'TURN_CANCELLED')).toHaveLength(1);
    expect(types.filter((t) => t === 'TURN_USAGE_UPDATED')).toHaveLength(100);
  });

  it('numbers turns without duplicates under concurrent startTurn', async () => {
    const sessionId = await newSession();
    const numbers: number[] = [];
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all(
        Array.from({ length: 10 }, () => gql(app, StartTurn, { input: { sessionId, agentIds: ['a'] } }, auth)),
      );
      const started = results.filter((r) => !r.errors);
      expect(started).toHaveLength(1);
      for (const r of results.filter((r) => r.errors)) expect(r.errors![0].extensions?.code).toBe('TURN_ALREADY_ACTIVE');
      const turn = started[0].data!.startTurn;
      numbers.push(turn.number);
      // The same client key from many callers at once: one turn.
      const keyed = await Promise.all(Array.from({ length: 5 }, () => gql(app, CancelTurn, { input: { turnId: turn.id } }, auth)));
      expect(keyed.filter((r) => !r.errors)).toHaveLength(1);
    }
    const sameKey = await Promise.all(
      Array.from({ length: 10 }, () => gqlOk(app, StartTurn, { input: { sessionId, agentIds: ['a'], turnId: 'k' } }, auth)),
    );
    expect(new Set(sameKey.map((r) => r.startTurn.id)).size).toBe(1);
    numbers.push(sameKey[0].startTurn.number);
    expect(numbers).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe(`turn events (${backend.label})`, () => {
  it('streams turn events in order with sequence numbers, also in sessionEvents, and replays after a sequence', async () => {
    const sessionId = await newSession();
    const live = subscribeSse(app.yoga.fetch as never, TURN_EVENTS, { id: sessionId, after: 0 }, (d) => d.turnEvents as TurnEv, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const turn = await start(sessionId, ['a', 'b']);
    await gqlOk(app, ReportUsage, { input: { turnId: turn.id, agentId: 'a', inputTokens: 5, model: 'm' } }, auth);
    await gqlOk(app, AppendMessages, { input: { sessionId, turnId: turn.id, messages: [{ role: 'ASSISTANT', text: 'x' }] } }, auth);
    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'a', success: true } }, auth);
    await gqlOk(app, CompleteAgent, { input: { turnId: turn.id, agentId: 'b', success: false, error: 'boom' } }, auth);
    const events = await live.collector.until((e) => e.some((x) => x.__typename === 'TurnFailed'), 10_000, 'TurnFailed');
    live.unsubscribe();
    expect(events.map((e) => [e.__typename, e.sequence])).toEqual([
      ['TurnStarted', 2],
      ['TurnUsageUpdated', 3],
      ['TurnAgentCompleted', 5],
      ['TurnAgentCompleted', 6],
      ['TurnFailed', 7],
    ]);
    expect(events[1]).toMatchObject({ agentId: 'a', model: 'm', delta: { inputTokens: 5 }, total: { inputTokens: 5, outputTokens: 0 } });
    expect(events[4]).toMatchObject({ cause: 'AGENT_FAILED', error: 'agent b failed: boom', turn: { id: turn.id, status: 'FAILED' } });

    const replay = subscribeSse(app.yoga.fetch as never, SESSION_EVENTS, { id: sessionId, after: 1 }, (d) => d.sessionEvents as TurnEv, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const all = await replay.collector.until((e) => e.length >= 6, 10_000, 'replayed events');
    replay.unsubscribe();
    expect(all.map((e) => e.__typename)).toEqual([
      'TurnStarted',
      'TurnUsageUpdated',
      'MessageAdded',
      'TurnAgentCompleted',
      'TurnAgentCompleted',
      'TurnFailed',
    ]);
    expect(all.map((e) => e.sequence)).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it('refuses subscribing to a session of another workspace or an unknown one', async () => {
    const sessionId = await newSession();
    const unknown = globalIdOf('Session', '01900000-0000-7000-8000-000000000000');
    for (const query of [TURN_EVENTS, SESSION_EVENTS]) {
      for (const [id, key] of [
        [sessionId, API_KEYS.beta],
        [unknown, API_KEYS.alpha],
      ]) {
        const sse = subscribeSse(app.yoga.fetch as never, query, { id }, (d) => d, { authorization: `Bearer ${key}` });
        await expect(sse.collector.until(() => false, 5_000, 'refusal')).rejects.toThrow(/NOT_FOUND/);
        sse.unsubscribe();
      }
    }
  });

  it('ends sessionEvents and turnEvents streams of a deleted session with a final SessionDeleted', async () => {
    const sessionId = await newSession();
    const headers = { authorization: `Bearer ${API_KEYS.alpha}` };
    const sessionStream = subscribeSse(
      app.yoga.fetch as never,
      SESSION_EVENTS,
      { id: sessionId, after: 0 },
      (d) => d.sessionEvents as TurnEv,
      headers,
    );
    const turnStream = subscribeSse(
      app.yoga.fetch as never,
      TURN_EVENTS,
      { id: sessionId, after: 0 },
      (d) => d.turnEvents as TurnEv,
      headers,
    );
    await start(sessionId);
    await sessionStream.collector.until((e) => e.length >= 2, 10_000, 'TurnStarted');
    await turnStream.collector.until((e) => e.length >= 1, 10_000, 'TurnStarted');
    await gqlOk(app, DeleteSession, { input: { sessionId } }, auth);
    await waitCompleted(sessionStream.collector);
    await waitCompleted(turnStream.collector);
    expect(sessionStream.collector.events.map((e) => [e.__typename, e.sequence])).toEqual([
      ['MessageAdded', 1],
      ['TurnStarted', 2],
      ['SessionDeleted', 3],
    ]);
    expect((sessionStream.collector.events[2] as unknown as { deletedSessionId: string }).deletedSessionId).toBe(sessionId);
    expect(turnStream.collector.events.map((e) => e.__typename)).toEqual(['TurnStarted']);
  });
});

/** Waits until a collector's stream completes (the server ended it). */
async function waitCompleted(collector: { completed: boolean; until: (p: () => boolean, ms: number, what: string) => Promise<unknown> }) {
  if (collector.completed) return;
  await collector
    .until(() => false, 10_000, 'completion')
    .catch((error: Error) => {
      if (!collector.completed) throw error;
    });
  expect(collector.completed).toBe(true);
}

describe(`stale-turn sweeper (${backend.label})`, () => {
  it('fails an idle turn exactly once with a clear error and leaves a turn with recent activity alone', async () => {
    const idle = await newSession();
    const busy = await newSession();
    const idleTurn = await start(idle, ['a']);
    const busyTurn = await start(busy, ['a']);
    // Time is moved, not waited for: two sweeps at once, as if 10 min 1 s had passed (the default
    // TURN_TIMEOUT_MS), the busy turn having had activity 5 min into them.
    const later = new Date(Date.now() + 601_000);
    await app.runtime.db.sql.query(`UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1`, [
      rawIdOf(busyTurn.id),
      new Date(Date.now() + 300_000).toISOString(),
    ]);
    const [a, b] = await Promise.all([app.runtime.turns.sweep(later), app.runtime.turns.sweep(later)]);
    const swept = [...a, ...b];
    expect(swept.filter((id) => id === rawIdOf(idleTurn.id))).toHaveLength(1);
    expect(swept).not.toContain(rawIdOf(busyTurn.id));
    const failed = await gqlOk(app, TurnDetails, { id: idleTurn.id }, auth);
    expect(failed.node).toMatchObject({ status: 'FAILED', agents: [{ agentId: 'a', status: 'FAILED' }] });
    expect((failed.node as { error: string }).error).toMatch(/No usage report, message or heartbeat for 10 min \(TURN_TIMEOUT_MS\)/);
    expect((await loggedTypes(app, idle)).filter((t) => t === 'TURN_FAILED')).toHaveLength(1);
    expect((await gqlOk(app, TurnDetails, { id: busyTurn.id }, auth)).node).toMatchObject({ status: 'ACTIVE' });
  });
});

describe.runIf(backend.postgresUrl)(`turns across two server instances (${backend.label})`, () => {
  it('the sweeper on two instances fails a stale turn exactly once', async () => {
    const config = { turnTimeoutMs: 200, turnSweepIntervalMs: 20 };
    const apiKeys = [{ workspace: 'alpha', key: API_KEYS.alpha }];
    const one = await createTestApp({ apiKeys, config });
    const two = await createTestApp({ apiKeys, config, shareWith: one });
    try {
      const sessionId = await newSession(one);
      const live = subscribeSse(one.yoga.fetch as never, TURN_EVENTS, { id: sessionId, after: 0 }, (d) => d.turnEvents as TurnEv, {
        authorization: `Bearer ${API_KEYS.alpha}`,
      });
      const turn = await start(sessionId, ['a', 'b'], {}, two);
      const events = await live.collector.until((e) => e.some((x) => x.__typename === 'TurnFailed'), 20_000, 'TurnFailed');
      live.unsubscribe();
      expect(events.find((e) => e.__typename === 'TurnFailed')).toMatchObject({
        cause: 'TIMEOUT',
        turn: { id: turn.id, status: 'FAILED' },
      });
      // Both sweepers keep running; sweeping again on both at once changes nothing.
      await Promise.all([one.runtime.turns.sweep(), two.runtime.turns.sweep(), one.runtime.turns.sweep(), two.runtime.turns.sweep()]);
      expect((await loggedTypes(one, sessionId)).filter((t) => t === 'TURN_FAILED')).toHaveLength(1);
    } finally {
      await two.close();
      await one.close();
    }
  });

  it.runIf(backend.redisUrl)('delivers turn events from mutations on one instance to a graphql-ws subscriber on the other', async () => {
    const apiKeys = [{ workspace: 'alpha', key: API_KEYS.alpha }];
    const one = await createTestApp({ apiKeys });
    const two = await createTestApp({ apiKeys, shareWith: one });
    const url = await one.listen(0, '127.0.0.1');
    const client = wsClient(url, { Authorization: `Bearer ${API_KEYS.alpha}` });
    try {
      const sessionId = await newSession(two);
      const { collector, unsubscribe } = subscribeWs(client, TURN_EVENTS, { id: sessionId, after: 0 }, (d) => d.turnEvents as TurnEv);
      const turn = await start(sessionId, ['a', 'b'], {}, two);
      // The same report sent to both instances at once counts once.
      await Promise.all(
        [one, two].map((target) =>
          gqlOk(target, ReportUsage, { input: { turnId: turn.id, agentId: 'a', inputTokens: 3, callId: 'x' } }, auth),
        ),
      );
      // Completions spread over both instances: the turn completes once.
      await Promise.all(
        ['a', 'b', 'a', 'b', 'a', 'b'].map((agentId, i) =>
          gql(i % 2 ? one : two, CompleteAgent, { input: { turnId: turn.id, agentId, success: true } }, auth),
        ),
      );
      const events = await collector.until((e) => e.some((x) => x.__typename === 'TurnCompleted'), 10_000, 'TurnCompleted');
      unsubscribe();
      expect(events.map((e) => e.__typename)).toEqual([
        'TurnStarted',
        'TurnUsageUpdated',
        'TurnAgentCompleted',
        'TurnAgentCompleted',
        'TurnCompleted',
      ]);
      const sequences = events.map((e) => e.sequence);
      expect(sequences).toEqual([...sequences].sort((x, y) => x - y));
      expect((await loggedTypes(one, sessionId)).filter((t) => t === 'TURN_COMPLETED' || t === 'TURN_USAGE_UPDATED')).toEqual([
        'TURN_USAGE_UPDATED',
        'TURN_COMPLETED',
      ]);
    } finally {
      await client.dispose();
      await two.close();
      await one.close();
      await dropTestDatabases();
    }
  });
});
