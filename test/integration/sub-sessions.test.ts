import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  backend,
  createTestApp,
  gql,
  gqlError,
  gqlOk,
  rawIdOf,
  type TestApp,
  useTestApp,
  TWO_WORKSPACES,
} from '../helpers/app.js';
import { subscribeSse } from '../helpers/subscriptions.js';

// Sub-agent sessions (issue 14, part 2): nesting in a turn, usage roll-up, the wrapped event
// stream, the flattened timeline, forks and deletes. String documents: the shapes are read loosely.

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

type Msg = { role: string; text: string };
const user = (text: string): Msg => ({ role: 'USER', text });
const assistant = (text: string): Msg => ({ role: 'ASSISTANT', text });

const CREATE = `mutation Create($input: CreateSessionInput!) {
  createSession(input: $input) { id kind agentId parentMessageCount parentTurn { id } root { id } parent { id } messageCount }
}`;
const START = `mutation Start($input: StartTurnInput!) { startTurn(input: $input) { id } }`;
const REPORT = `mutation Report($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;
const COMPLETE = `mutation Complete($input: CompleteAgentInput!) { completeAgent(input: $input) { id status } }`;
const APPEND = `mutation Append($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id index } } }`;
const FORK = `mutation Fork($input: ForkSessionInput!) { forkSession(input: $input) { session { id kind messageCount parent { id } } excludedMessage { id text } } }`;
const DELETE = `mutation Delete($input: DeleteSessionInput!) { deleteSession(input: $input) { deletedSessionIds } }`;
const USAGE = `query Usage($turn: ID!, $session: ID!) {
  turn: node(id: $turn) { ... on Turn { usage { inputTokens outputTokens cost } ownUsage { inputTokens outputTokens cost } } }
  session(id: $session) { usage { inputTokens outputTokens } ownUsage { inputTokens outputTokens } treeUsage { inputTokens } }
}`;
const GRAPH = `query Graph($id: ID!) {
  session(id: $id) {
    kind
    messages { edges { node { text } } }
    subSessions { totalCount edges { node { id kind agentId } } }
    turns { edges { node { id subSessions { totalCount edges { node { id } } } } } }
  }
}`;
const TIMELINE = `query Timeline($id: ID!, $first: Int, $after: String) {
  session(id: $id) {
    timeline(first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { index depth session { id } message { text index } } }
    }
  }
}`;
const EVENTS = `subscription Events($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    __typename
    sequence
    ... on SubSessionCreated {
      subSessionId
    }
    ... on SubSessionEvent {
      subSessionId
      subSession { id }
      turn { id }
      event {
        __typename
        sequence
        session { id }
        ... on MessageAdded { index message { text } }
        ... on TurnUsageUpdated { delta { inputTokens } }
        ... on SessionDeleted { deletedSessionId }
      }
    }
  }
}`;

type Edges<T> = { edges: { node: T }[] };
type GraphData = {
  session: {
    kind: string;
    messages: Edges<{ text: string }>;
    subSessions: { totalCount: number } & Edges<{ id: string; kind: string; agentId: string }>;
    turns: Edges<{ id: string; subSessions: { totalCount: number } & Edges<{ id: string }> }>;
  };
};
type TimelineNodeData = { index: number; depth: number; session: { id: string }; message: { text: string; index: number } };
type TimelineData = {
  session: { timeline: { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string } } & Edges<TimelineNodeData> };
};
type ForkData = {
  forkSession: {
    session: { id: string; kind: string; messageCount: number; parent: { id: string } | null };
    excludedMessage: { text: string };
  };
};
type DeleteData = { deleteSession: { deletedSessionIds: string[] } };

type Ev = {
  __typename: string;
  sequence: number;
  subSessionId?: string;
  subSession?: { id: string } | null;
  turn?: { id: string } | null;
  event?: { __typename: string; sequence: number; session: { id: string } | null; index?: number; deletedSessionId?: string };
};

async function createSession(input: Record<string, unknown>, target: TestApp = app) {
  return (await gqlOk<{ createSession: Record<string, unknown> & { id: string } }, unknown>(target, CREATE, { input }, auth)).createSession;
}
async function startTurn(sessionId: string, agentIds = ['lead'], target: TestApp = app) {
  return (await gqlOk<{ startTurn: { id: string } }, unknown>(target, START, { input: { sessionId, agentIds } }, auth)).startTurn.id;
}
async function report(turnId: string, agentId: string, inputTokens: number, target: TestApp = app, callId?: string) {
  await gqlOk(target, REPORT, { input: { turnId, agentId, inputTokens, outputTokens: 1, callId } }, auth);
}
async function usage(turnId: string, sessionId: string, target: TestApp = app) {
  type U = { inputTokens: number; outputTokens: number; cost?: number };
  return gqlOk<{ turn: { usage: U; ownUsage: U }; session: { usage: U; ownUsage: U; treeUsage: U } }, unknown>(
    target,
    USAGE,
    { turn: turnId, session: sessionId },
    auth,
  );
}
async function storedSequences(sessionId: string) {
  const rows = await app.runtime.db.prisma.sessionEvent.findMany({
    where: { sessionId: rawIdOf(sessionId) },
    orderBy: { sequence: 'asc' },
  });
  return rows;
}

/** A parent with a USER and an ASSISTANT message and an ACTIVE turn. */
async function parentWithTurn() {
  const parent = await createSession({ title: 'lead', messages: [user('plan the trip'), assistant('delegating')] });
  const turnId = await startTurn(parent.id);
  return { parentId: parent.id, turnId };
}

describe(`sub-agent sessions (${backend.label})`, () => {
  it('creates a sub-session nested in an ACTIVE turn, shows it in the session graph, keeps the messages apart', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const sub = await createSession({ title: 'researcher', parentTurnId: turnId, agentId: 'researcher', messages: [user('find flights')] });
    expect(sub).toMatchObject({
      kind: 'SUB_AGENT',
      agentId: 'researcher',
      parentMessageCount: 2,
      parentTurn: { id: turnId },
      root: { id: sub.id },
      parent: null,
      messageCount: 1,
    });
    const graph = await gqlOk<GraphData, unknown>(app, GRAPH, { id: parentId }, auth);
    expect(graph.session.kind).toBe('ROOT');
    expect(graph.session.messages.edges.map((e) => e.node.text)).toEqual(['plan the trip', 'delegating']);
    expect(graph.session.subSessions).toEqual({
      totalCount: 1,
      edges: [{ node: { id: sub.id, kind: 'SUB_AGENT', agentId: 'researcher' } }],
    });
    expect(graph.session.turns.edges[0].node.subSessions).toEqual({ totalCount: 1, edges: [{ node: { id: sub.id } }] });
    const kinds = await gqlOk<{ sessions: Edges<{ id: string }> }, unknown>(
      app,
      `query { sessions(kind: SUB_AGENT, first: 200) { edges { node { id } } } }`,
      {},
      auth,
    );
    expect(kinds.sessions.edges.map((e) => e.node.id)).toContain(sub.id);
  });

  it('refuses bad parents with contract codes, naming opaque ids, and writes nothing', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const before = await app.runtime.db.prisma.session.count();
    const foreign = await gqlError(app, CREATE, { input: { parentTurnId: turnId, agentId: 'x' } }, { apiKey: API_KEYS.beta });
    expect(foreign.code).toBe('NOT_FOUND');
    expect(foreign.message).toContain(turnId);
    expect(foreign.message).not.toContain(rawIdOf(turnId));
    const noAgent = await gqlError(app, CREATE, { input: { parentTurnId: turnId } }, auth);
    expect(noAgent.code).toBe('BAD_USER_INPUT');
    const agentOnly = await gqlError(app, CREATE, { input: { agentId: 'x' } }, auth);
    expect(agentOnly.code).toBe('BAD_USER_INPUT');
    const wrongType = await gqlError(app, CREATE, { input: { parentTurnId: parentId, agentId: 'x' } }, auth);
    expect(wrongType.code).toBe('NOT_FOUND');
    await gqlOk(app, COMPLETE, { input: { turnId, agentId: 'lead', success: true } }, auth);
    const ended = await gqlError(app, CREATE, { input: { parentTurnId: turnId, agentId: 'x' } }, auth);
    expect(ended.code).toBe('TURN_NOT_ACTIVE');
    expect(ended.message).toContain(turnId);
    expect(await app.runtime.db.prisma.session.count()).toBe(before);
  });

  it('rolls usage up recursively: Turn.usage includes sub-sessions, Turn.ownUsage does not, Session.usage sums its turns', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const sub = await createSession({ parentTurnId: turnId, agentId: 'r' });
    const subTurn = await startTurn(sub.id, ['r']);
    const subSub = await createSession({ parentTurnId: subTurn, agentId: 'rr' });
    const subSubTurn = await startTurn(subSub.id, ['rr']);
    await report(turnId, 'lead', 1);
    await report(subTurn, 'r', 10);
    await report(subSubTurn, 'rr', 100);
    const top = await usage(turnId, parentId);
    expect(top.turn.usage).toMatchObject({ inputTokens: 111, outputTokens: 3 });
    expect(top.turn.ownUsage).toMatchObject({ inputTokens: 1, outputTokens: 1 });
    expect(top.session.usage).toMatchObject({ inputTokens: 111, outputTokens: 3 });
    expect(top.session.ownUsage).toMatchObject({ inputTokens: 1 });
    expect(top.session.treeUsage).toMatchObject({ inputTokens: 111 });
    const middle = await usage(subTurn, sub.id);
    expect(middle.turn.usage.inputTokens).toBe(110);
    expect(middle.turn.ownUsage.inputTokens).toBe(10);
    expect(middle.session.usage.inputTokens).toBe(110);
    // Usage reported after the sub-session's turn ended still rolls up.
    await gqlOk(app, COMPLETE, { input: { turnId: subSubTurn, agentId: 'rr', success: true } }, auth);
    await report(subSubTurn, 'rr', 1000);
    expect((await usage(turnId, parentId)).turn.usage.inputTokens).toBe(1111);
  });

  it('keeps the roll-up exact under racing reports in the parent and its sub-sessions', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const subs = await Promise.all([0, 1, 2].map((i) => createSession({ parentTurnId: turnId, agentId: `r${i}` })));
    const subTurns = await Promise.all(subs.map((s, i) => startTurn(s.id, [`r${i}`])));
    const deep = await createSession({ parentTurnId: subTurns[0], agentId: 'deep' });
    const deepTurn = await startTurn(deep.id, ['deep']);
    const targets: [string, string][] = [[turnId, 'lead'], ...subTurns.map((t, i): [string, string] => [t, `r${i}`]), [deepTurn, 'deep']];
    const calls = Array.from({ length: 60 }, (_, i) => targets[i % targets.length]);
    await Promise.all(calls.map(([t, agent], i) => report(t, agent, i + 1, app, `call-${i}`)));
    // Retries of every call change nothing.
    await Promise.all(calls.map(([t, agent], i) => report(t, agent, i + 1, app, `call-${i}`)));
    const total = (60 * 61) / 2;
    const read = await usage(turnId, parentId);
    expect(read.turn.usage.inputTokens).toBe(total);
    expect(read.session.usage.inputTokens).toBe(total);
    const own = calls.reduce((sum, [t], i) => (t === turnId ? sum + i + 1 : sum), 0);
    expect(read.turn.ownUsage.inputTokens).toBe(own);
    // Every report of a sub-session is in the parent's log as a wrapper, without gaps.
    const rows = await storedSequences(parentId);
    rows.forEach((row, i) => expect(row.sequence).toBe(i + 1));
    const wrappedUsage = rows.filter(
      (r) => r.type === 'SUB_SESSION_EVENT' && (r.payload as { event: { type: string } }).event.type === 'TURN_USAGE_UPDATED',
    );
    expect(wrappedUsage).toHaveLength(calls.filter(([t]) => t !== turnId).length);
  });

  it('wraps sub-session events on the parent stream, with replay after any sequence without gaps or duplicates', async () => {
    const { parentId, turnId } = await parentWithTurn();
    // From the parent's current end on: replay covers whatever lands before the stream is live.
    const start = (await storedSequences(parentId)).length;
    const live = subscribeSse(app.yoga.fetch as never, EVENTS, { id: parentId, after: start }, (d) => d.sessionEvents as Ev, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const sub = await createSession({ parentTurnId: turnId, agentId: 'r', messages: [user('go')] });
    const subTurn = await startTurn(sub.id, ['r']);
    const subSub = await createSession({ parentTurnId: subTurn, agentId: 'rr' });
    await gqlOk(app, APPEND, { input: { sessionId: subSub.id, messages: [assistant('deep answer')] } }, auth);
    await report(subTurn, 'r', 7);
    await gqlOk(app, APPEND, { input: { sessionId: parentId, turnId, messages: [assistant('summary')] } }, auth);

    const rows = await storedSequences(parentId);
    const last = rows[rows.length - 1].sequence;
    const events = await live.collector.until((e) => e.some((x) => x.sequence === last), 10_000, `sequence ${last}`);
    live.unsubscribe();
    // The sub-session's creation comes first; the sub-sub-session's creation is an event of the
    // sub-session, so it arrives wrapped.
    expect(events.filter((e) => e.__typename === 'SubSessionCreated').map((e) => e.subSessionId)).toEqual([sub.id]);
    expect(events.findIndex((e) => e.__typename === 'SubSessionCreated')).toBe(0);
    const wrappers = events.filter((e) => e.__typename === 'SubSessionEvent');
    expect(wrappers.map((w) => [w.subSessionId, w.event!.__typename])).toEqual([
      [sub.id, 'MessageAdded'],
      [sub.id, 'TurnStarted'],
      [sub.id, 'SubSessionCreated'],
      [subSub.id, 'MessageAdded'],
      [sub.id, 'TurnUsageUpdated'],
    ]);
    expect(wrappers[0]).toMatchObject({
      subSession: { id: sub.id },
      turn: { id: turnId },
      event: { sequence: 1, index: 0, session: { id: sub.id } },
    });
    // The sub-sub-session's event names the turn of this session it hangs under.
    expect(wrappers[3]).toMatchObject({ turn: { id: turnId }, event: { session: { id: subSub.id } } });

    const replayAll = subscribeSse(app.yoga.fetch as never, EVENTS, { id: parentId, after: 0 }, (d) => d.sessionEvents as Ev, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const all = await replayAll.collector.until((e) => e.some((x) => x.sequence === last), 10_000, 'replay');
    replayAll.unsubscribe();
    expect(all.map((e) => e.sequence)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    for (const after of [1, 3, last - 1]) {
      const replay = subscribeSse(app.yoga.fetch as never, EVENTS, { id: parentId, after }, (d) => d.sessionEvents as Ev, {
        authorization: `Bearer ${API_KEYS.alpha}`,
      });
      const got = await replay.collector.until((e) => e.some((x) => x.sequence === last), 10_000, `replay after ${after}`);
      replay.unsubscribe();
      expect(got).toEqual(all.slice(after));
    }
  });

  it('flattens the timeline with sub-session messages where they happened, pages it, and forks by timelineIndex', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const a = await createSession({ parentTurnId: turnId, agentId: 'a', messages: [user('a0'), assistant('a1')] });
    const aTurn = await startTurn(a.id, ['a']);
    await createSession({ parentTurnId: aTurn, agentId: 'aa', messages: [user('aa0')] });
    await gqlOk(app, APPEND, { input: { sessionId: a.id, messages: [assistant('a2')] } }, auth);
    await gqlOk(app, APPEND, { input: { sessionId: parentId, turnId, messages: [assistant('p2'), user('p3')] } }, auth);
    const b = await createSession({ parentTurnId: turnId, agentId: 'b', messages: [user('b0')] });

    const read = await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: parentId, first: 100 }, auth);
    const items = read.session.timeline.edges.map((e) => e.node);
    // aa was made when a had 2 messages; a when the parent had 2; b when it had 4.
    expect(items.map((i) => i.message.text)).toEqual(['plan the trip', 'delegating', 'a0', 'a1', 'aa0', 'a2', 'p2', 'p3', 'b0']);
    expect(items.map((i) => i.depth)).toEqual([0, 0, 1, 1, 2, 1, 0, 0, 1]);
    expect(items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(items[8].session.id).toBe(b.id);
    expect(read.session.timeline.totalCount).toBe(9);
    // Pages join up.
    const first = await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: parentId, first: 4 }, auth);
    const rest = await gqlOk<TimelineData, unknown>(
      app,
      TIMELINE,
      { id: parentId, first: 100, after: first.session.timeline.pageInfo.endCursor },
      auth,
    );
    expect([...first.session.timeline.edges, ...rest.session.timeline.edges].map((e) => e.node.message.text)).toEqual(
      items.map((i) => i.message.text),
    );
    expect(first.session.timeline.pageInfo.hasNextPage).toBe(true);

    // A position inside a sub-session is refused; a parent USER message forks as messageIndex would.
    const inside = await gqlError(app, FORK, { input: { sessionId: parentId, timelineIndex: 4 } }, auth);
    expect(inside.code).toBe('FORK_POINT_IN_SUB_SESSION');
    expect(inside.message).toContain(items[4].session.id);
    expect((await gqlError(app, FORK, { input: { sessionId: parentId, timelineIndex: 9 } }, auth)).code).toBe('FORK_INDEX_OUT_OF_RANGE');
    expect((await gqlError(app, FORK, { input: { sessionId: parentId, timelineIndex: 1, messageIndex: 1 } }, auth)).code).toBe(
      'BAD_USER_INPUT',
    );
    const forked = await gqlOk<ForkData, unknown>(app, FORK, { input: { sessionId: parentId, timelineIndex: 7 } }, auth);
    expect(forked.forkSession).toMatchObject({
      session: { kind: 'FORK', messageCount: 3, parent: { id: parentId } },
      excludedMessage: { text: 'p3' },
    });

    // Forking a sub-session at its own messages works.
    const subFork = await gqlOk<ForkData, unknown>(app, FORK, { input: { sessionId: a.id, messageIndex: 0 } }, auth);
    expect(subFork.forkSession).toMatchObject({
      session: { kind: 'FORK', messageCount: 0, parent: { id: a.id } },
      excludedMessage: { text: 'a0' },
    });
  });

  it('deletes sub-sessions (nested ones and their forks) with the parent, ending their streams', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const sub = await createSession({ parentTurnId: turnId, agentId: 'r', messages: [user('x')] });
    const subTurn = await startTurn(sub.id, ['r']);
    const subSub = await createSession({ parentTurnId: subTurn, agentId: 'rr' });
    const subFork = (await gqlOk<ForkData, unknown>(app, FORK, { input: { sessionId: sub.id, messageIndex: 0 } }, auth)).forkSession
      .session;
    const subStream = subscribeSse(app.yoga.fetch as never, EVENTS, { id: subSub.id, after: 0 }, (d) => d.sessionEvents as Ev, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const deleted = await gqlOk<DeleteData, unknown>(app, DELETE, { input: { sessionId: parentId } }, auth);
    expect([...deleted.deleteSession.deletedSessionIds].sort()).toEqual([parentId, sub.id, subSub.id, subFork.id].sort());
    const events = await subStream.collector.until((e) => e.some((x) => x.__typename === 'SessionDeleted'), 10_000, 'SessionDeleted');
    expect(events[events.length - 1].__typename).toBe('SessionDeleted');
    for (const id of [parentId, sub.id, subSub.id, subFork.id]) {
      expect(await app.runtime.db.prisma.session.findUnique({ where: { id: rawIdOf(id) } })).toBeNull();
    }
  });

  it('keeps the SessionDeleted of a sub-session deleted on its own in the parent log', async () => {
    const { parentId, turnId } = await parentWithTurn();
    const sub = await createSession({ parentTurnId: turnId, agentId: 'r' });
    const deleted = await gqlOk<DeleteData, unknown>(app, DELETE, { input: { sessionId: sub.id } }, auth);
    expect(deleted.deleteSession.deletedSessionIds).toEqual([sub.id]);
    const replay = subscribeSse(app.yoga.fetch as never, EVENTS, { id: parentId, after: 0 }, (d) => d.sessionEvents as Ev, {
      authorization: `Bearer ${API_KEYS.alpha}`,
    });
    const events = await replay.collector.until((e) => e.some((x) => x.__typename === 'SubSessionEvent'), 10_000, 'wrapper');
    replay.unsubscribe();
    expect(events.find((e) => e.__typename === 'SubSessionEvent')).toMatchObject({
      subSessionId: sub.id,
      subSession: null,
      event: { __typename: 'SessionDeleted', deletedSessionId: sub.id, session: null },
    });
    const graph = await gqlOk<GraphData, unknown>(app, GRAPH, { id: parentId }, auth);
    expect(graph.session.subSessions.totalCount).toBe(0);
  });
});

describe.runIf(backend.postgresUrl)(`sub-agent usage across two instances (${backend.label})`, () => {
  it('rolls up exactly when reports race in the parent and sub-sessions on two instances', async () => {
    const apiKeys = [{ workspace: 'alpha', key: API_KEYS.alpha }];
    const one = await createTestApp({ apiKeys });
    const two = await createTestApp({ apiKeys, shareWith: one });
    try {
      const parent = await createSession({ messages: [user('go')] }, one);
      const turnId = await startTurn(parent.id, ['lead'], one);
      const sub = await createSession({ parentTurnId: turnId, agentId: 'r' }, two);
      const subTurn = await startTurn(sub.id, ['r'], two);
      const deep = await createSession({ parentTurnId: subTurn, agentId: 'd' }, one);
      const deepTurn = await startTurn(deep.id, ['d'], two);
      const targets: [string, string][] = [
        [turnId, 'lead'],
        [subTurn, 'r'],
        [deepTurn, 'd'],
      ];
      const results = await Promise.all(
        Array.from({ length: 90 }, (_, i) =>
          gql(i % 2 ? one : two, REPORT, { input: { turnId: targets[i % 3][0], agentId: targets[i % 3][1], inputTokens: i + 1 } }, auth),
        ),
      );
      expect(results.filter((r) => r.errors)).toEqual([]);
      const read = await usage(turnId, parent.id, one);
      expect(read.turn.usage.inputTokens).toBe((90 * 91) / 2);
      const rows = await one.runtime.db.prisma.sessionEvent.findMany({
        where: { sessionId: rawIdOf(parent.id) },
        orderBy: { sequence: 'asc' },
      });
      rows.forEach((row, i) => expect(row.sequence).toBe(i + 1));
      expect(
        rows.filter(
          (r) => r.type === 'SUB_SESSION_EVENT' && (r.payload as { event: { type: string } }).event.type === 'TURN_USAGE_UPDATED',
        ),
      ).toHaveLength(60);
    } finally {
      await two.close();
      await one.close();
    }
  });
});
