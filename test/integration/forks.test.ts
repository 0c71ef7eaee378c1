import { describe, expect, it } from 'vitest';
import { FORK_SUFFIX_SQL } from '../../src/db/stores/sessions.js';
import { forkNumberOf, forkTitleBase } from '../../src/domain/fork-title.js';
import type { ForkPageQuery, MessageInput, MessageRole } from '../generated/graphql.js';
import {
  API_KEYS,
  backend,
  createTestApp,
  gqlError,
  gqlOk,
  type GqlOptions,
  rawIdOf,
  type TestApp,
  useTestApp,
  TWO_WORKSPACES,
} from '../helpers/app.js';
import {
  AppendMessages,
  CreateSession,
  DeleteSession,
  ForkPage,
  ForkSession,
  ForkSessionIds,
  SessionForkTree,
  SessionGraph,
  SessionsList,
  UpdateMessage,
  UpdateSession,
} from '../helpers/documents.js';
import { subscribeSse } from '../helpers/subscriptions.js';

// Forks: the contract's forkSession rules, copy-on-write reads, titles, deletion, concurrency,
// the session graph without N+1 queries, and SessionForked on the parent's event stream.

let app: TestApp;

useTestApp((built) => {
  app = built;
});

// ---------------------------------------------------------------------------------------------
// Helpers

/** Alternating USER (even positions) / ASSISTANT (odd) messages for positions [from, from+count), text "<label>:<pos>". */
function turns(label: string, from: number, count: number): MessageInput[] {
  return Array.from({ length: count }, (_, i) => {
    const pos = from + i;
    return { role: (pos % 2 === 0 ? 'USER' : 'ASSISTANT') as MessageRole, text: `${label}:${pos}` };
  });
}
const texts = (label: string, from: number, count: number) => turns(label, from, count).map((m) => m.text!);

async function createRoot(
  title: string,
  messages: MessageInput[] = [],
  extra: { settings?: unknown; metadata?: unknown } = {},
  options?: GqlOptions,
  on = app,
) {
  return (await gqlOk(on, CreateSession, { input: { title, messages, ...extra } }, options)).createSession;
}

async function append(sessionId: string, messages: MessageInput[], on = app) {
  return (await gqlOk(on, AppendMessages, { input: { sessionId, messages } })).appendMessages;
}

type ForkInput = { sessionId: string; messageIndex?: number | null; messageId?: string | null; title?: string | null };

async function fork(input: ForkInput, options?: GqlOptions, on = app) {
  return (await gqlOk(on, ForkSession, { input }, options)).forkSession;
}

async function forkError(input: ForkInput, options?: GqlOptions, on = app) {
  return gqlError(on, ForkSession, { input }, options);
}

/** Every message of a session, in one page (at most 500). */
async function allMessages(id: string, options?: GqlOptions) {
  const data = await gqlOk(app, ForkPage, { id, first: 500 }, options);
  const session = data.session!;
  return { count: session.messageCount, nodes: session.messages.edges.map((e) => e.node) };
}

/** Asserts a session's whole message list: texts in order, indexes 0..n-1, messageCount n. */
async function expectTexts(id: string, expected: string[]) {
  const { count, nodes } = await allMessages(id);
  expect(nodes.map((n) => n.text)).toEqual(expected);
  expect(nodes.map((n) => n.index)).toEqual(expected.map((_, i) => i));
  expect(count).toBe(expected.length);
  return nodes;
}

/** The database id behind an opaque global ID ("Session:<uuid>" in base64). */
const rawId = rawIdOf;

/** Rows in the tables a fork could write to. */
async function rowCounts(on = app) {
  const prisma = on.runtime.db.prisma;
  const [sessions, messages, events] = await Promise.all([prisma.session.count(), prisma.message.count(), prisma.sessionEvent.count()]);
  return { sessions, messages, events };
}

async function graph(id: string, options?: GqlOptions) {
  return (await gqlOk(app, SessionGraph, { id }, options)).session!;
}

const forkNumber = (title: string, base: string) => {
  const match = /^([\s\S]*) \(fork ([0-9]+)\)$/.exec(title);
  expect(match?.[1], `"${title.slice(0, 60)}" should be "${base.slice(0, 60)} (fork N)"`).toBe(base);
  return Number(match![2]);
};

// A small conversation with every role: 0 SYSTEM, 1 USER, 2 ASSISTANT (tool call), 3 TOOL, 4 ASSISTANT, 5 USER, 6 ASSISTANT, 7 USER.
const MIXED: MessageInput[] = [
  { role: 'SYSTEM', text: 'Be brief.' },
  { role: 'USER', text: 'q1' },
  {
    role: 'ASSISTANT',
    parts: [{ text: { text: 'checking' } }, { toolCall: { callId: 'c1', name: 'weather', arguments: { city: 'Oslo' } } }],
  },
  { role: 'TOOL', parts: [{ toolResult: { callId: 'c1', content: '4°C' } }] },
  { role: 'ASSISTANT', text: 'a1' },
  { role: 'USER', text: 'q2' },
  { role: 'ASSISTANT', text: 'a2' },
  { role: 'USER', text: 'q3' },
];

// ---------------------------------------------------------------------------------------------

describe(`forkSession rules (${backend.label})`, () => {
  it('holds messages [0, messageIndex), leaves out the USER message there, and carries settings and metadata', async () => {
    const settings = { model: 'gpt-4o', maxConsecutiveToolCalls: 5, toolOutputBudget: 2000, nested: { a: [1, 2, { b: null }] } };
    const metadata = { project: 'atlas', tags: ['x', 'y'] };
    const root = await createRoot('Weather', MIXED, { settings, metadata });
    const parentMessages = await allMessages(root.id);

    const result = await fork({ sessionId: root.id, messageIndex: 5 });
    expect(result.session).toMatchObject({
      title: 'Weather (fork 1)',
      forkIndex: 5,
      messageCount: 5,
      depth: 1,
      settings,
      metadata,
      parent: { id: root.id },
      root: { id: root.id },
    });
    expect(result.excludedMessage).toMatchObject({ id: parentMessages.nodes[5].id, index: 5, role: 'USER', text: 'q2', generating: false });
    expect(result.excludedMessage.parts).toEqual([{ __typename: 'TextPart', text: 'q2' }]);

    // Exactly the prefix, as the same messages (same IDs, same indexes).
    const forked = await allMessages(result.session.id);
    expect(forked.count).toBe(5);
    expect(forked.nodes).toEqual(parentMessages.nodes.slice(0, 5));

    const g = await graph(result.session.id);
    expect(g).toMatchObject({
      forkIndex: 5,
      depth: 1,
      parent: { id: root.id },
      root: { id: root.id },
      forkPointMessage: { id: parentMessages.nodes[5].id, index: 5 },
    });
    expect(g.ancestors.map((a) => a.id)).toEqual([root.id]);
    const rootGraph = await graph(root.id);
    expect(rootGraph).toMatchObject({
      forkIndex: null,
      depth: 0,
      parent: null,
      root: { id: root.id },
      ancestors: [],
      forkPointMessage: null,
    });
    expect(rootGraph.forks.edges.map((e) => e.node)).toEqual([{ id: result.session.id, title: 'Weather (fork 1)', forkIndex: 5 }]);
    expect(rootGraph.forks.totalCount).toBe(1);
    const listed = await gqlOk(app, SessionsList, { first: 10, parentId: root.id });
    expect(listed.sessions.edges.map((e) => e.node.id)).toEqual([result.session.id]);
    const roots = await gqlOk(app, SessionsList, { first: 100, rootsOnly: true });
    expect(roots.sessions.edges.map((e) => e.node.id)).toContain(root.id);
    expect(roots.sessions.edges.map((e) => e.node.id)).not.toContain(result.session.id);

    // The fork keeps its settings when the parent's change later, and the other way round.
    await gqlOk(app, UpdateSession, { input: { sessionId: root.id, settings: { model: 'other' }, metadata: {} } });
    // (A fork of the fork made now starts from the fork's settings, which are still the original ones.)
    const forkAgain = await fork({ sessionId: result.session.id, messageIndex: 1 });
    expect(forkAgain.session).toMatchObject({ settings, metadata, depth: 2, forkIndex: 1, messageCount: 1 });
    expect((await graph(forkAgain.session.id)).ancestors.map((a) => a.id)).toEqual([result.session.id, root.id]);
  });

  it('forks at the first and at the last message', async () => {
    const root = await createRoot('Edges', turns('E', 0, 7)); // USER at 0, 2, 4, 6
    const atZero = await fork({ sessionId: root.id, messageIndex: 0 });
    expect(atZero.session).toMatchObject({ forkIndex: 0, messageCount: 0 });
    expect(atZero.excludedMessage.text).toBe('E:0');
    await expectTexts(atZero.session.id, []);
    const atLast = await fork({ sessionId: root.id, messageIndex: 6 });
    expect(atLast.session.messageCount).toBe(6);
    expect(atLast.excludedMessage).toMatchObject({ index: 6, text: 'E:6' });
    await expectTexts(atLast.session.id, texts('E', 0, 6));
    // A fork at 0 starts its own list at index 0.
    const own = await append(atZero.session.id, [{ role: 'USER', text: 'fresh' }]);
    expect(own.messages[0].index).toBe(0);
    await expectTexts(atZero.session.id, ['fresh']);
    await expectTexts(root.id, texts('E', 0, 7));
  });

  it('accepts messageId instead of messageIndex, and needs exactly one of the two', async () => {
    const root = await createRoot('ById', turns('B', 0, 10));
    const { nodes } = await allMessages(root.id);
    const byId = await fork({ sessionId: root.id, messageId: nodes[4].id });
    expect(byId.session).toMatchObject({ forkIndex: 4, messageCount: 4, title: 'ById (fork 1)' });
    expect(byId.excludedMessage.id).toBe(nodes[4].id);
    await expectTexts(byId.session.id, texts('B', 0, 4));

    // An inherited message is addressable by ID in the fork too.
    const f = await fork({ sessionId: root.id, messageIndex: 8 });
    await append(f.session.id, turns('F', 8, 2));
    const inherited = await fork({ sessionId: f.session.id, messageId: nodes[2].id });
    expect(inherited.session).toMatchObject({ forkIndex: 2, parent: { id: f.session.id }, depth: 2 });
    const fOwn = (await allMessages(f.session.id)).nodes[8];
    const ownById = await fork({ sessionId: f.session.id, messageId: fOwn.id });
    expect(ownById.session.forkIndex).toBe(8);
    await expectTexts(ownById.session.id, texts('B', 0, 8));

    const before = await rowCounts();
    const bad: [string, ForkInput, string][] = [
      ['both', { sessionId: root.id, messageIndex: 4, messageId: nodes[4].id }, 'BAD_USER_INPUT'],
      ['both, null title', { sessionId: root.id, messageIndex: 4, messageId: nodes[4].id, title: null }, 'BAD_USER_INPUT'],
      ['neither', { sessionId: root.id }, 'BAD_USER_INPUT'],
      ['neither (explicit nulls)', { sessionId: root.id, messageIndex: null, messageId: null }, 'BAD_USER_INPUT'],
      ['malformed message id', { sessionId: root.id, messageId: 'garbage' }, 'BAD_USER_INPUT'],
      ['a session id as message id', { sessionId: root.id, messageId: root.id }, 'NOT_FOUND'],
      // The root's message 8 is not in f's view (f has its own message at 8).
      ["an ancestor's message after the cut", { sessionId: f.session.id, messageId: nodes[8].id }, 'NOT_FOUND'],
      // f's own message is not in the root's view.
      ["a fork's own message, from the parent", { sessionId: root.id, messageId: fOwn.id }, 'NOT_FOUND'],
      ['an ASSISTANT message', { sessionId: root.id, messageId: nodes[3].id }, 'FORK_POINT_NOT_USER_MESSAGE'],
    ];
    for (const [label, input, code] of bad) {
      const error = await forkError(input);
      expect(error.code, `${label}: ${error.message}`).toBe(code);
      expect(error.message.length, label).toBeGreaterThan(10);
    }
    const other = await createRoot('Other', turns('O', 0, 2));
    const otherMessage = (await allMessages(other.id)).nodes[0];
    expect((await forkError({ sessionId: root.id, messageId: otherMessage.id })).code).toBe('NOT_FOUND');
    expect(await rowCounts()).toEqual({
      ...before,
      sessions: before.sessions + 1,
      messages: before.messages + 2,
      events: before.events + 2,
    });
  });

  it('refuses indexes outside the list with FORK_INDEX_OUT_OF_RANGE and writes nothing', async () => {
    const root = await createRoot('Range', turns('R', 0, 6));
    const f = await fork({ sessionId: root.id, messageIndex: 4 }); // count 4
    const empty = await createRoot('Empty');
    const before = await rowCounts();
    const cases: [string, string, number][] = [
      ['-1', root.id, -1],
      ['count', root.id, 6],
      ['count + 1', root.id, 7],
      ['2^31 - 1', root.id, 2 ** 31 - 1],
      ['-2^31', root.id, -(2 ** 31)],
      ["a fork's count (the parent has a message there)", f.session.id, 4],
      ["a fork's count + 1", f.session.id, 5],
      ['0 in an empty session', empty.id, 0],
    ];
    for (const [label, sessionId, messageIndex] of cases) {
      const error = await forkError({ sessionId, messageIndex });
      expect(error.code, `${label}: ${error.message}`).toBe('FORK_INDEX_OUT_OF_RANGE');
      expect(error.message, label).toMatch(/messageIndex/);
    }
    // Beyond Int: rejected by GraphQL itself, before any resolver.
    expect((await forkError({ sessionId: root.id, messageIndex: 2 ** 31 })).message).toMatch(/Int/);
    expect(await rowCounts()).toEqual(before);
    expect((await graph(root.id)).forks.totalCount).toBe(1);
  });

  it('refuses a cut at a SYSTEM, ASSISTANT or TOOL message with FORK_POINT_NOT_USER_MESSAGE and writes nothing', async () => {
    const root = await createRoot('Roles', MIXED);
    const before = await rowCounts();
    for (const [index, role] of [
      [0, 'SYSTEM'],
      [2, 'ASSISTANT'],
      [3, 'TOOL'],
      [4, 'ASSISTANT'],
      [6, 'ASSISTANT'],
    ] as const) {
      const error = await forkError({ sessionId: root.id, messageIndex: index });
      expect(error.code, `${role} at ${index}: ${error.message}`).toBe('FORK_POINT_NOT_USER_MESSAGE');
      expect(error.message).toContain(role);
    }
    // The same in a fork, on an inherited message.
    const f = await fork({ sessionId: root.id, messageIndex: 7 });
    const mid = await rowCounts();
    expect(mid.sessions).toBe(before.sessions + 1);
    expect((await forkError({ sessionId: f.session.id, messageIndex: 3 })).code).toBe('FORK_POINT_NOT_USER_MESSAGE');
    expect(await rowCounts()).toEqual(mid);
  });

  it('answers NOT_FOUND for an unknown session and for a session of another workspace, writing nothing', async () => {
    const unknown = Buffer.from('Session:01890000-0000-7000-8000-000000000000').toString('base64');
    expect((await forkError({ sessionId: unknown, messageIndex: 0 })).code).toBe('NOT_FOUND');
    expect((await forkError({ sessionId: 'not-an-id', messageIndex: 0 })).code).toBe('BAD_USER_INPUT');

    const keyed = await createTestApp({
      apiKeys: TWO_WORKSPACES,
    });
    try {
      const alpha = { apiKey: API_KEYS.alpha };
      const beta = { apiKey: API_KEYS.beta };
      const secret = await createRoot('secret', turns('S', 0, 4), {}, alpha, keyed);
      const alphaMessages = (await gqlOk(keyed, ForkPage, { id: secret.id, first: 10 }, alpha)).session!.messages.edges.map((e) => e.node);
      const before = await rowCounts(keyed);
      const byIndex = await forkError({ sessionId: secret.id, messageIndex: 2 }, beta, keyed);
      expect(byIndex.code).toBe('NOT_FOUND');
      // The same message as an out-of-range index of the foreign session: still NOT_FOUND, no range leak.
      expect((await forkError({ sessionId: secret.id, messageIndex: 99 }, beta, keyed)).code).toBe('NOT_FOUND');
      expect((await forkError({ sessionId: secret.id, messageId: alphaMessages[2].id }, beta, keyed)).code).toBe('NOT_FOUND');
      // beta's own session with alpha's message: the message is not in it.
      const mine = await createRoot('mine', turns('M', 0, 4), {}, beta, keyed);
      const afterMine = await rowCounts(keyed);
      expect((await forkError({ sessionId: mine.id, messageId: alphaMessages[2].id }, beta, keyed)).code).toBe('NOT_FOUND');
      expect(afterMine.sessions).toBe(before.sessions + 1);
      expect(await rowCounts(keyed)).toEqual(afterMine);
      // And the owner can fork it; the fork stays invisible to beta.
      const ok = await fork({ sessionId: secret.id, messageIndex: 2 }, alpha, keyed);
      expect((await gqlOk(keyed, SessionGraph, { id: ok.session.id }, beta)).session).toBeNull();
      expect((await gqlOk(keyed, SessionGraph, { id: ok.session.id }, alpha)).session?.parent?.id).toBe(secret.id);
    } finally {
      await keyed.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe(`fork titles (${backend.label})`, () => {
  it('numbers forks across the whole tree: "T" → (fork 1), (fork 2); a fork of "T (fork 1)" → (fork 3)', async () => {
    const root = await createRoot('T', turns('T', 0, 6));
    const f1 = await fork({ sessionId: root.id, messageIndex: 4 });
    const f2 = await fork({ sessionId: root.id, messageIndex: 2 });
    const f3 = await fork({ sessionId: f1.session.id, messageIndex: 2 });
    const f4 = await fork({ sessionId: f3.session.id, messageIndex: 0 });
    const f5 = await fork({ sessionId: f2.session.id, messageIndex: 0 });
    expect([f1, f2, f3, f4, f5].map((f) => f.session.title)).toEqual([
      'T (fork 1)',
      'T (fork 2)',
      'T (fork 3)',
      'T (fork 4)',
      'T (fork 5)',
    ]);
    // Another tree with the same title counts on its own.
    const other = await createRoot('T', turns('T', 0, 2));
    expect((await fork({ sessionId: other.id, messageIndex: 0 })).session.title).toBe('T (fork 1)');
  });

  it.each([
    ['Q1 (fork 2) Analysis', 'Q1 (fork 2) Analysis (fork 1)'],
    ['X (fork 2) ', 'X (fork 2)  (fork 1)'],
    ['שלום עולם', 'שלום עולם (fork 1)'],
    ['تحليل الربع الأول', 'تحليل الربع الأول (fork 1)'],
    ['🍴 emoji 👨‍👩‍👧', '🍴 emoji 👨‍👩‍👧 (fork 1)'],
    ['a\nb', 'a\nb (fork 1)'],
    ['50% off_ [x] (y) \\ ^$ .*', '50% off_ [x] (y) \\ ^$ .* (fork 1)'],
  ])('title %j forks as %j, and its fork goes on counting', async (title, expected) => {
    const root = await createRoot(title, turns('x', 0, 4));
    const first = await fork({ sessionId: root.id, messageIndex: 2 });
    expect(first.session.title).toBe(expected);
    // A fork of the fork has the same base: the next number, never a second suffix.
    const second = await fork({ sessionId: first.session.id, messageIndex: 0 });
    expect(second.session.title).toBe(`${title} (fork 2)`);
  });

  it('takes a root titled "X (fork 2)" as base "X" with number 2 already used', async () => {
    const root = await createRoot('X (fork 2)', turns('x', 0, 2));
    expect((await fork({ sessionId: root.id, messageIndex: 0 })).session.title).toBe('X (fork 3)');
  });

  it('handles a 10,000-character title', async () => {
    const long = 'ل'.repeat(5_000) + 'L'.repeat(5_000);
    const root = await createRoot(long, turns('x', 0, 4));
    const f1 = await fork({ sessionId: root.id, messageIndex: 2 });
    expect(f1.session.title).toBe(`${long} (fork 1)`);
    const f2 = await fork({ sessionId: f1.session.id, messageIndex: 0 });
    expect(f2.session.title).toBe(`${long} (fork 2)`);
    // An explicit title over the limit is refused, at the limit accepted.
    expect((await forkError({ sessionId: root.id, messageIndex: 0, title: 'x'.repeat(10_001) })).code).toBe('BAD_USER_INPUT');
    expect((await fork({ sessionId: root.id, messageIndex: 0, title: 'y'.repeat(10_000) })).session.title).toHaveLength(10_000);
  });

  it('uses an explicit title as given, and counts explicit "(fork N)" titles numerically', async () => {
    const root = await createRoot('T', turns('x', 0, 4));
    expect((await fork({ sessionId: root.id, messageIndex: 0, title: 'My branch' })).session.title).toBe('My branch');
    // A blank title is refused (leave it out for the generated one).
    expect((await forkError({ sessionId: root.id, messageIndex: 2, title: '' })).code).toBe('BAD_USER_INPUT');
    expect((await forkError({ sessionId: root.id, messageIndex: 2, title: ' \n' })).code).toBe('BAD_USER_INPUT');
    expect((await fork({ sessionId: root.id, messageIndex: 0, title: '  padded  ' })).session.title).toBe('  padded  ');
    await fork({ sessionId: root.id, messageIndex: 0, title: 'T (fork 9)' });
    await fork({ sessionId: root.id, messageIndex: 0, title: 'T (fork 10)' });
    expect((await fork({ sessionId: root.id, messageIndex: 0 })).session.title).toBe('T (fork 11)');
    await fork({ sessionId: root.id, messageIndex: 0, title: 'T (fork 99999999999999999999)' });
    expect((await fork({ sessionId: root.id, messageIndex: 0 })).session.title).toBe('T (fork 100000000000000000000)');
  });

  it('never repeats a generated title in a tree', async () => {
    const root = await createRoot('Tree', turns('x', 0, 8));
    const ids = [root.id];
    const titles: string[] = [];
    for (let i = 0; i < 16; i++) {
      const parent = ids[(i * 7) % ids.length];
      const f = await fork({ sessionId: parent, messageIndex: 0 });
      await append(f.session.id, turns(`f${i}`, 0, 2));
      ids.push(f.session.id);
      titles.push(f.session.title);
    }
    expect(new Set(titles).size).toBe(titles.length);
    expect(titles.map((t) => forkNumber(t, 'Tree')).sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
  });

  it('stores the same fork number and base in SQL as in TypeScript, for every title write', async () => {
    const root = await createRoot('samples', turns('x', 0, 2));
    const id = rawId(root.id);
    const samples = [
      'T (fork 1)',
      'Q1 (fork 2) Analysis',
      'X (fork 2) ',
      ' (fork 1)',
      'T (fork 1) (fork 2)',
      'a\nb (fork 3)',
      'a (fork 3)\n',
      'שלום (fork 4)',
      'T (fork 007)',
      'T (fork 99999999999999999999999)',
      'no suffix',
      'T (fork )',
    ];
    const prisma = app.runtime.db.prisma;
    for (const title of samples) {
      // The generated columns follow a rename as they follow a fork's or a create's title.
      await gqlOk(app, UpdateSession, { input: { sessionId: root.id, title } });
      for (const base of new Set([forkTitleBase(title), title, 'T', 'T (fork 1)', ''])) {
        const [row] = await prisma.$queryRaw<{ n: string | null; sameBase: boolean }[]>`
          SELECT "forkNumber"::text AS n, "forkTitleBaseHash" = decode(md5(${base}::text), 'hex')
                 AND regexp_replace(title, ${FORK_SUFFIX_SQL}::text, '') = ${base}::text AS "sameBase"
          FROM "Session" WHERE id = ${id}`;
        const stored = row.sameBase && row.n !== null ? BigInt(row.n) : null;
        expect(stored, JSON.stringify({ title, base })).toBe(forkNumberOf(title, base));
      }
    }
  });

  it('counts a title renamed into the tree, and forgets one renamed away', async () => {
    const root = await createRoot('Renamed', turns('x', 0, 4));
    const f1 = await fork({ sessionId: root.id, messageIndex: 2 });
    expect(f1.session.title).toBe('Renamed (fork 1)');
    await gqlOk(app, UpdateSession, { input: { sessionId: f1.session.id, title: 'Renamed (fork 40)' } });
    expect((await fork({ sessionId: root.id, messageIndex: 0 })).session.title).toBe('Renamed (fork 41)');
    const f41 = await fork({ sessionId: root.id, messageIndex: 2, title: 'Renamed (fork 50)' });
    await gqlOk(app, UpdateSession, { input: { sessionId: f41.session.id, title: 'Elsewhere' } });
    await gqlOk(app, UpdateSession, { input: { sessionId: f1.session.id, title: 'Renamed' } });
    // Left: "Renamed" (root), "Renamed" (f1), "Renamed (fork 41)", "Elsewhere".
    expect((await fork({ sessionId: f1.session.id, messageIndex: 0 })).session.title).toBe('Renamed (fork 42)');
  });

  it('numbers the next fork of a wide tree after its highest number, not its count', async () => {
    const root = await createRoot('Wide', turns('x', 0, 2));
    const id = rawId(root.id);
    // 300 forks inserted directly, numbered 1..300 out of order, plus other bases in the same tree.
    await app.runtime.db.prisma.$executeRaw`
      INSERT INTO "Session" (id, "workspaceId", title, "parentId", "rootId", "ancestorIds", depth, "forkIndex", lineage, "updatedAt")
      SELECT gen_random_uuid()::text, r."workspaceId",
             CASE WHEN g % 3 = 0 THEN 'Wider (fork ' || (g * 1000) || ')' ELSE r.title || ' (fork ' || ((g * 7) % 300 + 1) || ')' END,
             r.id, r.id, ARRAY[r.id], 1, 0, '[]'::jsonb, now()
      FROM "Session" r, generate_series(1, 300) AS g WHERE r.id = ${id}`;
    // (g * 7) % 300 + 1 over g not divisible by 3 reaches 300 (g = 257 → 1799 % 300 + 1 = 300).
    expect((await fork({ sessionId: root.id, messageIndex: 0 })).session.title).toBe('Wide (fork 301)');
  });
});

// ---------------------------------------------------------------------------------------------

describe(`copy-on-write (${backend.label})`, () => {
  it('keeps parent and fork independent: appends on either side never show in the other', async () => {
    const root = await createRoot('Indep', turns('P', 0, 8));
    const parentBefore = await allMessages(root.id);
    const f = await fork({ sessionId: root.id, messageIndex: 6 });

    const parentAppend = await append(root.id, turns('P', 8, 2));
    expect(parentAppend.session.messageCount).toBe(10);
    expect(parentAppend.messages.map((m) => m.index)).toEqual([8, 9]);
    const forkAppend = await append(f.session.id, turns('F', 6, 3));
    expect(forkAppend.session.messageCount).toBe(9);
    expect(forkAppend.messages.map((m) => m.index)).toEqual([6, 7, 8]);

    const p = await expectTexts(root.id, texts('P', 0, 10));
    const fk = await expectTexts(f.session.id, [...texts('P', 0, 6), ...texts('F', 6, 3)]);
    // The shared prefix is the same rows: same IDs in both.
    expect(fk.slice(0, 6).map((m) => m.id)).toEqual(parentBefore.nodes.slice(0, 6).map((m) => m.id));
    expect(p.slice(0, 8).map((m) => m.id)).toEqual(parentBefore.nodes.map((m) => m.id));
    // Own messages are distinct rows even where the positions coincide.
    expect(new Set([...p.map((m) => m.id), ...fk.map((m) => m.id)]).size).toBe(10 + 3);
    // The parent's excluded message is still the parent's only.
    expect(fk.find((m) => m.id === parentBefore.nodes[6].id)).toBeUndefined();
  });

  it('copies no message rows, whatever the parent length', async () => {
    const long = Array.from({ length: 1000 }, (_, i) => ({ role: (i % 2 === 0 ? 'USER' : 'ASSISTANT') as MessageRole, text: `L:${i}` }));
    const root = await createRoot('Long', long);
    const before = await app.runtime.db.prisma.message.count();
    const beforeSessions = await app.runtime.db.prisma.session.count();
    const f = await fork({ sessionId: root.id, messageIndex: 998 });
    const g = await fork({ sessionId: f.session.id, messageIndex: 500 });
    expect(await app.runtime.db.prisma.message.count()).toBe(before);
    expect(await app.runtime.db.prisma.session.count()).toBe(beforeSessions + 2);
    expect(f.session.messageCount).toBe(998);
    expect(g.session.messageCount).toBe(500);
    const tail = (await gqlOk(app, ForkPage, { id: f.session.id, last: 2 })).session!.messages.edges.map((e) => e.node);
    expect(tail.map((m) => [m.index, m.text])).toEqual([
      [996, 'L:996'],
      [997, 'L:997'],
    ]);
    const parentTail = (await gqlOk(app, ForkPage, { id: root.id, first: 2, after: Buffer.from('idx:995').toString('base64url') })).session!
      .messages.edges;
    expect(parentTail.map((e) => e.node.id)).toEqual(tail.map((m) => m.id));
    // The fork's rows: none.
    expect(await app.runtime.db.prisma.message.count({ where: { sessionId: rawId(f.session.id) } })).toBe(0);
  });

  it("sees exactly the right prefix through forks of forks of forks, including cuts below an ancestor's own start", async () => {
    const P = await createRoot('Deep', turns('P', 0, 10));
    const expected = new Map<string, string[]>();
    expected.set(P.id, texts('P', 0, 10));

    // F1 = P at 6, then 4 own messages: P0..5, F1:6..9
    const F1 = (await fork({ sessionId: P.id, messageIndex: 6 })).session;
    await append(F1.id, turns('F1', 6, 4));
    expected.set(F1.id, [...texts('P', 0, 6), ...texts('F1', 6, 4)]);
    // F2 = F1 at 2: below F1's own start (6), so it sees only P0..1; then F2:2..4
    const F2r = await fork({ sessionId: F1.id, messageIndex: 2 });
    expect(F2r.excludedMessage.text).toBe('P:2');
    const F2 = F2r.session;
    await append(F2.id, turns('F2', 2, 3));
    expected.set(F2.id, [...texts('P', 0, 2), ...texts('F2', 2, 3)]);
    // F3 = F2 at 4: P0..1, F2:2..3, then F3:4..5
    const F3 = (await fork({ sessionId: F2.id, messageIndex: 4 })).session;
    await append(F3.id, turns('F3', 4, 2));
    expected.set(F3.id, [...texts('P', 0, 2), ...texts('F2', 2, 2), ...texts('F3', 4, 2)]);
    // F4 = F3 at 2 (an F2 message): P0..1 only, depth 4
    const F4r = await fork({ sessionId: F3.id, messageIndex: 2 });
    expect(F4r.excludedMessage.text).toBe('F2:2');
    const F4 = F4r.session;
    expected.set(F4.id, texts('P', 0, 2));
    // F5 = F1 at 8: P0..5, F1:6..7
    const F5 = (await fork({ sessionId: F1.id, messageIndex: 8 })).session;
    expected.set(F5.id, [...texts('P', 0, 6), ...texts('F1', 6, 2)]);
    // F6 = F3 at 0: nothing inherited
    const F6 = (await fork({ sessionId: F3.id, messageIndex: 0 })).session;
    expected.set(F6.id, []);

    expect([F1, F2, F3, F4, F5, F6].map((s) => s.depth)).toEqual([1, 2, 3, 4, 2, 4]);
    expect((await graph(F4.id)).ancestors.map((a) => a.id)).toEqual([F3.id, F2.id, F1.id, P.id]);
    expect((await graph(F4.id)).root.id).toBe(P.id);

    // Later appends everywhere change nothing in the others.
    await append(P.id, turns('P', 10, 2));
    expected.set(P.id, texts('P', 0, 12));
    await append(F1.id, turns('F1', 10, 2));
    expected.get(F1.id)!.push(...texts('F1', 10, 2));
    await append(F4.id, turns('F4', 2, 3));
    expected.get(F4.id)!.push(...texts('F4', 2, 3));
    for (const [id, want] of expected) await expectTexts(id, want);

    // The message at a position is the same row in every session that sees it.
    const p0 = (await allMessages(P.id)).nodes[1].id;
    for (const id of [F1.id, F2.id, F3.id, F4.id, F5.id]) expect((await allMessages(id)).nodes[1].id).toBe(p0);
  });

  it('pages from either end across segment boundaries', async () => {
    // A chain of 8 forks, each cut 2 before its parent's end and adding 4: segments of 2 messages.
    const current = await createRoot('Pages', turns('L0', 0, 6));
    let want = texts('L0', 0, 6);
    let id = current.id;
    for (let level = 1; level <= 8; level++) {
      const cut = want.length - 2;
      id = (await fork({ sessionId: id, messageIndex: cut })).session.id;
      await append(id, turns(`L${level}`, cut, 4));
      want = [...want.slice(0, cut), ...texts(`L${level}`, cut, 4)];
    }
    expect(want).toHaveLength(22);
    await expectTexts(id, want);

    for (const size of [1, 3, 5]) {
      // Forward.
      const seen: string[] = [];
      let after: string | null | undefined;
      for (let page = 0; ; page++) {
        const data: ForkPageQuery = await gqlOk(app, ForkPage, { id, first: size, after });
        const conn = data.session!.messages;
        seen.push(...conn.edges.map((e) => e.node.text));
        expect(conn.edges.map((e) => e.node.index)).toEqual(conn.edges.map((_, i) => page * size + i));
        expect(conn.pageInfo.hasPreviousPage).toBe(page > 0);
        if (!conn.pageInfo.hasNextPage) break;
        after = conn.pageInfo.endCursor;
      }
      expect(seen).toEqual(want);
      // Backward.
      const back: string[] = [];
      let before: string | null | undefined;
      for (let page = 0; ; page++) {
        const data: ForkPageQuery = await gqlOk(app, ForkPage, { id, last: size, before });
        const conn = data.session!.messages;
        back.unshift(...conn.edges.map((e) => e.node.text));
        expect(conn.pageInfo.hasNextPage).toBe(page > 0);
        if (!conn.pageInfo.hasPreviousPage) break;
        before = conn.pageInfo.startCursor;
      }
      expect(back).toEqual(want);
    }
    // Windows between two cursors.
    const cursorAt = (i: number) => Buffer.from(`idx:${i}`).toString('base64url');
    const window = await gqlOk(app, ForkPage, { id, first: 10, after: cursorAt(2), before: cursorAt(9) });
    expect(window.session!.messages.edges.map((e) => e.node.text)).toEqual(want.slice(3, 9));
    const tail = await gqlOk(app, ForkPage, { id, last: 4, before: cursorAt(11) });
    expect(tail.session!.messages.edges.map((e) => e.node.text)).toEqual(want.slice(7, 11));
    const beyond = await gqlOk(app, ForkPage, { id, first: 5, after: cursorAt(40) });
    expect(beyond.session!.messages.edges).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe(`forks and generating messages (${backend.label})`, () => {
  it('refuses a cut after a message still generating, allows one before it', async () => {
    const root = await createRoot('Streaming', turns('S', 0, 3)); // U0 A1 U2
    const { messages } = await append(root.id, [
      { role: 'ASSISTANT', text: 'partial', generating: true }, // 3
      { role: 'USER', text: 'S:4' }, // 4
    ]);
    const streaming = messages[0];
    const before = await rowCounts();
    const refused = await forkError({ sessionId: root.id, messageIndex: 4 });
    expect(refused.code).toBe('BAD_USER_INPUT');
    expect(refused.message).toMatch(/generating/);
    expect((await forkError({ sessionId: root.id, messageId: messages[1].id })).code).toBe('BAD_USER_INPUT');
    expect(await rowCounts()).toEqual(before);

    // A cut before it is fine (its prefix holds finished messages only).
    const early = await fork({ sessionId: root.id, messageIndex: 2 });
    await expectTexts(early.session.id, ['S:0', 'S:1']);
    // Once finished, the later cut works and the fork sees the finished text.
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming.id, appendText: ' done', generating: false } });
    const late = await fork({ sessionId: root.id, messageIndex: 4 });
    await expectTexts(late.session.id, ['S:0', 'S:1', 'S:2', 'partial done']);
  });

  it('allows a cut at a USER message that is itself still generating (it is left out)', async () => {
    const root = await createRoot('Streaming user', turns('S', 0, 2));
    const { messages } = await append(root.id, [{ role: 'USER', text: 'typing', generating: true }]);
    const f = await fork({ sessionId: root.id, messageIndex: 2 });
    expect(f.excludedMessage).toMatchObject({ id: messages[0].id, generating: true });
    await expectTexts(f.session.id, ['S:0', 'S:1']);
  });

  it("checks a fork's own generating messages, and an ancestor's generating message past the cut does not matter", async () => {
    const root = await createRoot('Streaming fork', turns('S', 0, 4)); // U0 A1 U2 A3
    const f = await fork({ sessionId: root.id, messageIndex: 2 }); // S:0 S:1
    // The parent streams after the cut (positions 4, 5): the fork is unaffected and can be forked anywhere.
    await append(root.id, [
      { role: 'ASSISTANT', text: 'parent streaming', generating: true },
      { role: 'USER', text: 'S:5' },
    ]);
    expect((await forkError({ sessionId: root.id, messageIndex: 5 })).code).toBe('BAD_USER_INPUT');
    await append(f.session.id, [{ role: 'USER', text: 'F:2' }]);
    const clean = await fork({ sessionId: f.session.id, messageIndex: 2 });
    await expectTexts(clean.session.id, ['S:0', 'S:1']);
    // The fork's own generating message (3) blocks a cut after it (5), not one at or before it.
    await append(f.session.id, [
      { role: 'ASSISTANT', text: 'fork streaming', generating: true },
      { role: 'USER', text: 'F:4' },
      { role: 'USER', text: 'F:5' },
    ]);
    expect((await forkError({ sessionId: f.session.id, messageIndex: 4 })).code).toBe('BAD_USER_INPUT');
    expect((await forkError({ sessionId: f.session.id, messageIndex: 5 })).code).toBe('BAD_USER_INPUT');
    const before = await fork({ sessionId: f.session.id, messageIndex: 2 });
    expect(before.session.messageCount).toBe(2);
    // A fork of that fork, below the generating message, is fine too.
    const deeper = await fork({ sessionId: before.session.id, messageIndex: 0 });
    expect(deeper.session.messageCount).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe(`deleteSession and forks (${backend.label})`, () => {
  it('refuses a session with forks (SESSION_HAS_FORKS) and writes nothing; cascade deletes the whole subtree', async () => {
    const P = await createRoot('Del', turns('P', 0, 8));
    const F1 = (await fork({ sessionId: P.id, messageIndex: 6 })).session;
    await append(F1.id, turns('F1', 6, 2));
    const F11 = (await fork({ sessionId: F1.id, messageIndex: 6 })).session;
    await append(F11.id, turns('F11', 6, 1));
    const F2 = (await fork({ sessionId: P.id, messageIndex: 4 })).session;
    await append(F2.id, turns('F2', 4, 3));

    const before = await rowCounts();
    for (const id of [P.id, F1.id]) {
      const refused = await gqlError(app, DeleteSession, { input: { sessionId: id } });
      expect(refused.code).toBe('SESSION_HAS_FORKS');
      expect(refused.message).toMatch(/cascade/);
      const explicit = await gqlError(app, DeleteSession, { input: { sessionId: id, cascade: false } });
      expect(explicit.code).toBe('SESSION_HAS_FORKS');
    }
    expect(await rowCounts()).toEqual(before);

    // Deleting a leaf fork leaves its sibling's inherited messages (and their fork point) readable.
    const deletedF2 = await gqlOk(app, DeleteSession, { input: { sessionId: F2.id } });
    expect(deletedF2.deleteSession.deletedSessionIds).toEqual([F2.id]);
    await expectTexts(F1.id, [...texts('P', 0, 6), ...texts('F1', 6, 2)]);
    await expectTexts(F11.id, [...texts('P', 0, 6), ...texts('F11', 6, 1)]);
    expect((await graph(F11.id)).forkPointMessage).toMatchObject({ index: 6 });
    expect((await graph(P.id)).forks.edges.map((e) => e.node.id)).toEqual([F1.id]);
    const afterLeaf = await rowCounts();
    expect(afterLeaf.messages).toBe(before.messages - 3);

    // Cascade from the middle: F1 and F11 go, P stays whole.
    const mid = await gqlOk(app, DeleteSession, { input: { sessionId: F1.id, cascade: true } });
    expect(mid.deleteSession.deletedSessionIds).toEqual([F11.id, F1.id]);
    await expectTexts(P.id, texts('P', 0, 8));
    expect((await graph(P.id)).forks.totalCount).toBe(0);
    expect((await gqlOk(app, ForkPage, { id: F11.id })).session).toBeNull();

    // Cascade on a session without forks is a plain delete.
    const Q = await createRoot('Solo', turns('Q', 0, 2));
    expect((await gqlOk(app, DeleteSession, { input: { sessionId: Q.id, cascade: true } })).deleteSession.deletedSessionIds).toEqual([
      Q.id,
    ]);
  });

  it('cascades from the root through every level, deepest first, and removes every row', async () => {
    const P = await createRoot('Cascade', turns('P', 0, 6));
    const ids = [P.id];
    const depthOf = new Map([[P.id, 0]]);
    for (let i = 0; i < 7; i++) {
      const parent = ids[Math.floor(i / 2)];
      const f = (await fork({ sessionId: parent, messageIndex: 2 })).session;
      await append(f.id, turns(`f${i}`, 2, 2));
      ids.push(f.id);
      depthOf.set(f.id, f.depth);
    }
    const unrelated = await createRoot('Unrelated', turns('U', 0, 2));
    const before = await rowCounts();
    const result = await gqlOk(app, DeleteSession, { input: { sessionId: P.id, cascade: true } });
    const deleted = result.deleteSession.deletedSessionIds;
    expect([...deleted].sort()).toEqual([...ids].sort());
    const depths = deleted.map((id) => depthOf.get(id)!);
    expect(depths).toEqual([...depths].sort((a, b) => b - a));
    const after = await rowCounts();
    expect(after.sessions).toBe(before.sessions - ids.length);
    expect(after.messages).toBe(before.messages - 6 - 7 * 2);
    expect(await app.runtime.db.prisma.message.count({ where: { sessionId: { in: ids.map(rawId) } } })).toBe(0);
    expect(await app.runtime.db.prisma.sessionEvent.count({ where: { sessionId: { in: ids.map(rawId) } } })).toBe(0);
    await expectTexts(unrelated.id, texts('U', 0, 2));
  });
});

// ---------------------------------------------------------------------------------------------

describe(`concurrent forks (${backend.label})`, () => {
  it('12 concurrent forks of one parent get 12 distinct numbers 1..12', async () => {
    const root = await createRoot('Race', turns('R', 0, 10));
    const before = await rowCounts();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => fork({ sessionId: root.id, messageIndex: (i % 5) * 2 })));
    const numbers = results.map((r) => forkNumber(r.session.title, 'Race')).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(new Set(results.map((r) => r.session.id)).size).toBe(12);
    const after = await rowCounts();
    expect(after.sessions).toBe(before.sessions + 12);
    expect(after.messages).toBe(before.messages);
    expect(after.events).toBe(before.events + 12);
    for (const r of results) await expectTexts(r.session.id, texts('R', 0, r.session.forkIndex!));
    expect((await graph(root.id)).forks.totalCount).toBe(12);
  });

  it('concurrent forks of different sessions of one tree get distinct numbers', async () => {
    const root = await createRoot('Tree race', turns('R', 0, 6));
    const a = (await fork({ sessionId: root.id, messageIndex: 4 })).session; // 1
    const b = (await fork({ sessionId: a.id, messageIndex: 2 })).session; // 2
    const c = (await fork({ sessionId: root.id, messageIndex: 2 })).session; // 3
    const parents = [root.id, a.id, b.id, c.id];
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => fork({ sessionId: parents[i % 4], messageIndex: 0 })));
    const numbers = results.map((r) => forkNumber(r.session.title, 'Tree race')).sort((x, y) => x - y);
    expect(numbers).toEqual(Array.from({ length: 12 }, (_, i) => i + 4));
  });

  it('a fork racing appends on the same parent sees exactly the prefix at its index; the parent keeps every append', async () => {
    const root = await createRoot('Fork vs append', turns('R', 0, 10));
    const initial = (await allMessages(root.id)).nodes;
    const jobs: Promise<unknown>[] = [];
    const forks: { index: number; promise: ReturnType<typeof fork> }[] = [];
    for (let i = 0; i < 10; i++) {
      jobs.push(
        append(root.id, [
          { role: 'USER', text: `w${i}-q` },
          { role: 'ASSISTANT', text: `w${i}-a` },
        ]),
      );
      const index = (i % 5) * 2;
      const promise = fork({ sessionId: root.id, messageIndex: index });
      forks.push({ index, promise });
      jobs.push(promise);
    }
    await Promise.all(jobs);
    const parent = (await allMessages(root.id)).nodes;
    expect(parent).toHaveLength(30);
    expect(parent.map((m) => m.index)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(parent.slice(0, 10)).toEqual(initial);
    for (let i = 10; i < 30; i += 2) expect(parent[i + 1].text).toBe(parent[i].text.replace(/-q$/, '-a'));
    const titles = new Set<string>();
    for (const { index, promise } of forks) {
      const f = await promise;
      titles.add(f.session.title);
      expect(f.session.messageCount).toBe(index);
      expect(f.excludedMessage.id).toBe(initial[index].id);
      const mine = await allMessages(f.session.id);
      expect(mine.nodes).toEqual(initial.slice(0, index));
      // And the fork stays its own: an append there lands at its own end only.
      const own = await append(f.session.id, [{ role: 'USER', text: 'own' }]);
      expect(own.messages[0].index).toBe(index);
    }
    expect(titles.size).toBe(10);
    expect((await allMessages(root.id)).count).toBe(30);
  });

  it('forks racing deletes leave no fork without its parent', async () => {
    // Delete (no cascade) vs a fork of the same session: one of the two wins, cleanly.
    for (let round = 0; round < 4; round++) {
      const root = await createRoot(`Delete race ${round}`, turns('R', 0, 4));
      const leaf = (await fork({ sessionId: root.id, messageIndex: 2 })).session;
      const [deleted, forked] = await Promise.all([
        gqlError(app, DeleteSession, { input: { sessionId: leaf.id } }).catch(() => null),
        gqlError(app, ForkSession, { input: { sessionId: leaf.id, messageIndex: 0 } }).catch(() => null),
      ]);
      // gqlError throws when there is no error: null here means "succeeded".
      const outcome = [deleted?.code ?? 'ok', forked?.code ?? 'ok'].join('/');
      expect(['ok/NOT_FOUND', 'SESSION_HAS_FORKS/ok']).toContain(outcome);
    }
    // Cascade delete of a root vs forks anywhere in its tree: afterwards nothing of the tree is left.
    // (The racing forks ask for IDs only: a payload that reads the fork's relations after its commit
    // can find it already deleted, which is a different matter.)
    const root = await createRoot('Cascade race', turns('R', 0, 6));
    const child = (await fork({ sessionId: root.id, messageIndex: 4 })).session;
    const before = await rowCounts();
    const forkIds = (input: ForkInput) => gqlOk(app, ForkSessionIds, { input }).then((d) => d.forkSession);
    const results = await Promise.allSettled([
      forkIds({ sessionId: root.id, messageIndex: 2 }),
      forkIds({ sessionId: child.id, messageIndex: 2 }),
      gqlOk(app, DeleteSession, { input: { sessionId: root.id, cascade: true } }),
      forkIds({ sessionId: child.id, messageIndex: 0 }),
      forkIds({ sessionId: root.id, messageIndex: 0 }),
    ]);
    const deletion = results[2];
    expect(deletion.status).toBe('fulfilled');
    const deletedIds = (deletion as PromiseFulfilledResult<{ deleteSession: { deletedSessionIds: string[] } }>).value.deleteSession
      .deletedSessionIds;
    for (const [i, r] of results.entries()) {
      if (i === 2) continue;
      if (r.status === 'fulfilled') expect(deletedIds).toContain((r.value as { session: { id: string } }).session.id);
      else expect(String(r.reason)).toMatch(/NOT_FOUND/);
    }
    expect(await app.runtime.db.prisma.session.count({ where: { rootId: rawId(root.id) } })).toBe(0);
    const after = await rowCounts();
    expect(after.sessions).toBe(before.sessions - 2);
    expect(after.messages).toBe(before.messages - 6);
  });

  it.runIf(backend.postgresUrl)('concurrent forks through two server instances on one database get distinct numbers', async () => {
    const second = await createTestApp({ shareWith: app });
    try {
      const root = await createRoot('Two servers', turns('R', 0, 6));
      const sub = backend.redisUrl ? sseSubscribe(second, root.id) : null;
      try {
        const results = await Promise.all(
          Array.from({ length: 16 }, (_, i) => fork({ sessionId: root.id, messageIndex: (i % 3) * 2 }, undefined, i % 2 ? second : app)),
        );
        const numbers = results.map((r) => forkNumber(r.session.title, 'Two servers')).sort((a, b) => a - b);
        expect(numbers).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
        // Forks of forks, across both instances, keep counting.
        const nonEmpty = results.filter((r) => r.session.messageCount > 0).slice(0, 8);
        expect(nonEmpty).toHaveLength(8);
        const more = await Promise.all(
          nonEmpty.map((r, i) => fork({ sessionId: r.session.id, messageIndex: 0 }, undefined, i % 2 ? app : second)),
        );
        expect(more.map((r) => forkNumber(r.session.title, 'Two servers')).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 8 }, (_, i) => i + 17),
        );
        // Every SessionForked reaches a subscriber on the second instance, whichever instance forked (through Redis).
        if (!sub) return;
        const seen = await sub.waitFor(
          (events) => events.filter((e) => e.__typename === 'SessionForked').length >= 16,
          'all SessionForked',
        );
        const forkedIds = seen.filter((e) => e.__typename === 'SessionForked').map((e) => e.fork?.id);
        expect(new Set(forkedIds)).toEqual(new Set(results.map((r) => r.session.id)));
      } finally {
        await sub?.close();
      }
    } finally {
      await second.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe(`session graph without N+1 queries (${backend.label})`, () => {
  async function treeWithForks(title: string, forkCount: number) {
    const root = await createRoot(title, turns('G', 0, 24));
    const made: { id: string; forkIndex: number }[] = [];
    for (let i = 0; i < forkCount; i++) {
      const index = (i % 6) * 2; // several forks share a fork point
      const f = (await fork({ sessionId: root.id, messageIndex: index })).session;
      made.push({ id: f.id, forkIndex: index });
      // Some forks have a fork of their own, cut at their own message: not among the root's forks.
      if (i < 3) {
        await append(f.id, [{ role: 'USER', text: 'own' }]);
        await fork({ sessionId: f.id, messageIndex: index });
      }
    }
    return { root, made };
  }

  async function measure<T>(run: () => Promise<T>) {
    const counter = app.runtime.db.queries;
    counter.reset();
    const result = await run();
    return { result, count: counter.count, statements: [...counter.statements] };
  }

  it("lists a session's messages with their forks, and its forks with their fork point, in a fixed number of statements", async () => {
    const small = await treeWithForks('Graph small', 2);
    const large = await treeWithForks('Graph large', 10);
    const read = (id: string, messages = 24) => gqlOk(app, SessionForkTree, { id, messages, forks: 50 });
    // Warm-up (workspace lookup, the rows kept of finished messages and, on PGlite, of sessions):
    // each tree is measured as read again, so the counts compare like with like.
    await read(small.root.id);
    await read(large.root.id);
    const a = await measure(() => read(small.root.id));
    const b = await measure(() => read(large.root.id));
    const fewMessages = await measure(() => read(large.root.id, 4));

    for (const [{ made }, { result }] of [
      [small, a],
      [large, b],
    ] as const) {
      const s = result.session!;
      expect(s.forks.totalCount).toBe(made.length);
      expect(s.forks.edges.map((e) => [e.node.id, e.node.forkIndex, e.node.depth])).toEqual(made.map((m) => [m.id, m.forkIndex, 1]));
      for (const e of s.forks.edges) expect(e.node.forkPointMessage).toMatchObject({ index: e.node.forkIndex, role: 'USER' });
      const messages = s.messages.edges.map((e) => e.node);
      expect(messages).toHaveLength(24);
      for (const m of messages) {
        const want = made.filter((f) => f.forkIndex === m.index).map((f) => f.id);
        expect(
          m.forks.edges.map((e) => e.node.id),
          `forks at message ${m.index}`,
        ).toEqual(want);
        expect(m.forks.totalCount).toBe(want.length);
      }
    }
    const summary = `2 forks: ${a.count} statements, 10 forks: ${b.count}, 10 forks and a page of 4 messages: ${fewMessages.count}`;
    const shown = (m: { statements: string[] }) => m.statements.map((sql) => sql.slice(0, 160)).join('\n');
    expect(b.count, `${summary}\n${shown(b)}`).toBe(a.count);
    // Nor with the number of messages on the page ("branches from here" on every message).
    expect(b.count, `${summary}\n${shown(b)}`).toBe(fewMessages.count);
    expect(b.count, `${summary}\n${shown(b)}`).toBeLessThanOrEqual(6);
  });

  it('resolves ancestors, parent and root in a fixed number of statements whatever the depth', async () => {
    const root = await createRoot('Ancestry', turns('A', 0, 22));
    let id = root.id;
    const chain = [root.id];
    for (let i = 0; i < 10; i++) {
      id = (await fork({ sessionId: id, messageIndex: 20 - 2 * i })).session.id;
      chain.push(id);
    }
    const shallow = await measure(() => graph(chain[2]));
    const deep = await measure(() => graph(chain[10]));
    expect(deep.result.ancestors.map((a) => a.id)).toEqual(chain.slice(0, 10).reverse());
    expect(shallow.result.ancestors.map((a) => a.id)).toEqual([chain[1], chain[0]]);
    expect(deep.count, deep.statements.join('\n')).toBe(shallow.count);
  });

  it('reads the first and the last page of 50 messages of a fork nested 20 deep in at most 3 statements each', async () => {
    let want = texts('D0', 0, 10);
    let id = (await createRoot('Nested', turns('D0', 0, 10))).id;
    for (let level = 1; level <= 20; level++) {
      const cut = want.length - 2;
      id = (await fork({ sessionId: id, messageIndex: cut })).session.id;
      await append(id, turns(`D${level}`, cut, 6));
      want = [...want.slice(0, cut), ...texts(`D${level}`, cut, 6)];
    }
    expect(want).toHaveLength(90);
    expect((await graph(id)).depth).toBe(20);

    const first = await measure(() => gqlOk(app, ForkPage, { id, first: 50 }));
    const last = await measure(() => gqlOk(app, ForkPage, { id, last: 50 }));
    expect(first.result.session!.messages.edges.map((e) => e.node.text)).toEqual(want.slice(0, 50));
    expect(last.result.session!.messages.edges.map((e) => e.node.text)).toEqual(want.slice(40));
    expect(first.count, `first page:\n${first.statements.join('\n')}`).toBeLessThanOrEqual(3);
    expect(last.count, `last page:\n${last.statements.join('\n')}`).toBeLessThanOrEqual(3);
  });
});

// ---------------------------------------------------------------------------------------------

interface StreamedEvent {
  __typename: string;
  sequence: number;
  fork?: { id: string; title: string } | null;
  messageIndex?: number;
  excludedMessage?: { id: string } | null;
}

const SESSION_EVENTS = `subscription ($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    __typename
    sequence
    ... on SessionForked { fork { id title } messageIndex excludedMessage { id } }
  }
}`;

/** Subscribes to a session's events over SSE in process, from `afterSequence` on. */
function sseSubscribe(on: TestApp, sessionId: string, afterSequence: number | null = 0) {
  const { collector, unsubscribe } = subscribeSse(
    on.yoga.fetch as never,
    SESSION_EVENTS,
    { id: sessionId, after: afterSequence },
    (data) => data.sessionEvents as StreamedEvent,
  );
  return {
    events: collector.events,
    waitFor: (predicate: (events: StreamedEvent[]) => boolean, what: string, timeoutMs = 10_000) =>
      collector.until(predicate, timeoutMs, what),
    close: async () => unsubscribe(),
  };
}

describe(`SessionForked (${backend.label})`, () => {
  it("goes out on the parent's sessionEvents once the fork is committed", async () => {
    const root = await createRoot('Events', turns('E', 0, 4)); // 4 MessageAdded: sequences 1..4
    const sub = sseSubscribe(app, root.id, 0);
    try {
      await sub.waitFor((e) => e.length >= 4, 'the replayed MessageAdded events');
      expect(sub.events.map((e) => [e.__typename, e.sequence])).toEqual([1, 2, 3, 4].map((n) => ['MessageAdded', n]));

      // A refused fork publishes nothing (the next event gets the next sequence).
      expect((await forkError({ sessionId: root.id, messageIndex: 1 })).code).toBe('FORK_POINT_NOT_USER_MESSAGE');
      expect((await forkError({ sessionId: root.id, messageIndex: 4 })).code).toBe('FORK_INDEX_OUT_OF_RANGE');

      const made = await fork({ sessionId: root.id, messageIndex: 2 });
      const events = await sub.waitFor((e) => e.some((x) => x.__typename === 'SessionForked'), 'SessionForked');
      const forked = events.find((x) => x.__typename === 'SessionForked')!;
      expect(forked).toEqual({
        __typename: 'SessionForked',
        sequence: 5,
        fork: { id: made.session.id, title: 'Events (fork 1)' },
        messageIndex: 2,
        excludedMessage: { id: made.excludedMessage.id },
      });
      // Committed: the fork is readable by the time the event is seen.
      await expectTexts(made.session.id, texts('E', 0, 2));

      // Events of the fork itself go to the fork's stream, not the parent's.
      await append(made.session.id, [{ role: 'ASSISTANT', text: 'in the fork' }]);
      await append(root.id, [{ role: 'ASSISTANT', text: 'E:4' }]);
      await sub.waitFor((e) => e.length >= 6, 'the next MessageAdded');
      expect(sub.events.slice(4).map((e) => [e.__typename, e.sequence])).toEqual([
        ['SessionForked', 5],
        ['MessageAdded', 6],
      ]);

      // A fork of the fork is announced on the fork's stream (replayed from the start).
      const child = sseSubscribe(app, made.session.id, 0);
      try {
        const grand = await fork({ sessionId: made.session.id, messageIndex: 0 });
        const seen = await child.waitFor((e) => e.some((x) => x.__typename === 'SessionForked'), 'SessionForked on the fork');
        expect(seen.map((e) => [e.__typename, e.sequence])).toEqual([
          ['MessageAdded', 1],
          ['SessionForked', 2],
        ]);
        expect(seen[1].fork?.id).toBe(grand.session.id);
      } finally {
        await child.close();
      }
      expect(sub.events.filter((e) => e.__typename === 'SessionForked')).toHaveLength(1);
    } finally {
      await sub.close();
    }
  });

  it('replays SessionForked to a late subscriber, and shows a deleted fork as null', async () => {
    const root = await createRoot('Replay', turns('E', 0, 2));
    const made = await fork({ sessionId: root.id, messageIndex: 0 });
    await gqlOk(app, DeleteSession, { input: { sessionId: made.session.id } });
    const sub = sseSubscribe(app, root.id, 2);
    try {
      const [event] = await sub.waitFor((e) => e.length >= 1, 'the replayed SessionForked');
      expect(event).toEqual({
        __typename: 'SessionForked',
        sequence: 3,
        fork: null,
        messageIndex: 0,
        excludedMessage: { id: made.excludedMessage.id },
      });
    } finally {
      await sub.close();
    }
  });
});
