import { describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/tokens.js';
import { gql, gqlError, gqlOk, globalIdOf, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { subscribeSse } from '../helpers/subscriptions.js';

let app: TestApp;
useTestApp((built) => {
  app = built;
});

type Msg = { id: string; index: number; role: string; text: string; hidden: boolean; hiddenReason: string | null; redacted: boolean };
type Ctx = {
  tokenCount: number;
  droppedMessageCount: number;
  elidedToolResultCount: number;
  hasCompression: boolean;
  hasNewTransforms: boolean;
  payload: { messages: unknown[] };
  messages: { kind: string; text: string; sourceIndex: number | null; tokenCount: number }[];
  decisions: { index: number; decision: string; reason: string }[];
};

const MESSAGE = 'id index role text hidden hiddenReason redacted toolOutputsStripped redaction { replacement tokenCount redactedAt }';

async function createSession(messages: { role: string; text?: string; parts?: unknown[] }[], title = 'T') {
  const data = await gqlOk<{ createSession: { id: string; messages: { edges: { node: Msg }[] } } }, unknown>(
    app,
    `mutation ($input: CreateSessionInput!) { createSession(input: $input) { id messages(first: 500) { edges { node { ${MESSAGE} } } } } }`,
    { input: { title, messages } },
  );
  return { id: data.createSession.id, messages: data.createSession.messages.edges.map((e) => e.node) };
}

async function append(sessionId: string, messages: { role: string; text?: string; parts?: unknown[]; generating?: boolean }[]) {
  const data = await gqlOk<{ appendMessages: { messages: Msg[] } }, unknown>(
    app,
    `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { ${MESSAGE} } } }`,
    { input: { sessionId, messages } },
  );
  return data.appendMessages.messages;
}

async function messagesOf(sessionId: string): Promise<Msg[]> {
  const data = await gqlOk<{ node: { messages: { edges: { node: Msg }[] } } }, unknown>(
    app,
    `query ($id: ID!) { node(id: $id) { ... on Session { messages(first: 500) { edges { node { ${MESSAGE} } } } } } }`,
    { id: sessionId },
  );
  return data.node.messages.edges.map((e) => e.node);
}

const HIDE = `mutation ($input: HideMessagesInput!) { hideMessages(input: $input) { session { id } messages { ${MESSAGE} } } }`;
const UNHIDE = `mutation ($input: UnhideMessagesInput!) { unhideMessages(input: $input) { session { id } messages { ${MESSAGE} } } }`;
const REDACT = `mutation ($input: RedactMessageInput!) { redactMessage(input: $input) { session { id } message { ${MESSAGE} } } }`;
const UNREDACT = `mutation ($input: UnredactMessageInput!) { unredactMessage(input: $input) { message { ${MESSAGE} } } }`;
const STRIP = `mutation ($input: StripToolOutputsInput!) { stripToolOutputs(input: $input) { id toolOutputsStrippedUpto } }`;
const FORK = `mutation ($input: ForkSessionInput!) { forkSession(input: $input) { session { id toolOutputsStrippedUpto } } }`;
const ASSEMBLE = `mutation ($input: AssembleContextInput!) { assembleContext(input: $input) {
  tokenCount droppedMessageCount elidedToolResultCount hasCompression hasNewTransforms payload
  messages { kind text sourceIndex tokenCount } decisions { index decision reason } } }`;

const hide = (sessionId: string, messageIds: string[], reason: string) => gqlOk(app, HIDE, { input: { sessionId, messageIds, reason } });
const unhide = (sessionId: string, messageIds: string[]) => gqlOk(app, UNHIDE, { input: { sessionId, messageIds } });
const redact = (messageId: string, replacement: string, sessionId?: string) =>
  gqlOk<{ redactMessage: { message: Msg } }, unknown>(app, REDACT, { input: { messageId, replacement, sessionId } });
const fork = async (sessionId: string, messageIndex: number) =>
  (
    await gqlOk<{ forkSession: { session: { id: string; toolOutputsStrippedUpto: number } } }, unknown>(app, FORK, {
      input: { sessionId, messageIndex },
    })
  ).forkSession.session;
async function assemble(sessionId: string, extra: Record<string, unknown> = {}): Promise<Ctx> {
  return (await gqlOk<{ assembleContext: Ctx }, unknown>(app, ASSEMBLE, { input: { sessionId, format: 'OPENAI_CHAT', ...extra } }))
    .assembleContext;
}
const decisionAt = (ctx: Ctx, index: number) => ctx.decisions.find((d) => d.index === index)!;
const hiddenIndexes = (messages: Msg[]) => messages.filter((m) => m.hidden).map((m) => m.index);
const redactedIndexes = (messages: Msg[]) => messages.filter((m) => m.redacted).map((m) => m.index);
const transformRows = (sessionId: string) => app.runtime.db.prisma.messageTransform.count({ where: { sessionId: rawIdOf(sessionId) } });

const chat = (n: number, prefix = 'm') =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? 'USER' : 'ASSISTANT',
    text: `${prefix}${i} ${i % 2 === 0 ? 'question' : 'answer'}`,
  }));

describe('hideMessages / unhideMessages', () => {
  it('keeps hidden messages in the session, flags them and leaves them out of assembly with the reason', async () => {
    const s = await createSession(chat(6));
    const [m1, m2] = [s.messages[1], s.messages[2]];
    const hidden = await gqlOk<{ hideMessages: { messages: Msg[] } }, unknown>(app, HIDE, {
      input: { sessionId: s.id, messageIds: [m2.id, m1.id, m2.id], reason: 'off-topic detour' },
    });
    expect(hidden.hideMessages.messages.map((m) => [m.index, m.hidden, m.hiddenReason])).toEqual([
      [1, true, 'off-topic detour'],
      [2, true, 'off-topic detour'],
    ]);
    const listed = await messagesOf(s.id);
    expect(listed).toHaveLength(6);
    expect(hiddenIndexes(listed)).toEqual([1, 2]);

    const ctx = await assemble(s.id);
    expect(ctx.messages.map((m) => m.sourceIndex)).toEqual([0, 3, 4, 5]);
    expect(decisionAt(ctx, 1)).toMatchObject({ decision: 'HIDDEN', reason: 'Hidden by hideMessages: off-topic detour' });
    expect(decisionAt(ctx, 2).decision).toBe('HIDDEN');
    expect(JSON.stringify(ctx.payload)).not.toContain('m1 answer');
    expect(ctx.droppedMessageCount).toBe(0);

    await unhide(s.id, [m1.id]);
    expect(hiddenIndexes(await messagesOf(s.id))).toEqual([2]);
    expect((await assemble(s.id)).messages.map((m) => m.sourceIndex)).toEqual([0, 1, 3, 4, 5]);
  });

  it('drops the partner of a hidden tool call, and refuses when every user message is hidden', async () => {
    const s = await createSession([
      { role: 'USER', text: 'q' },
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c1', name: 'look', arguments: { a: 1 } } }] },
      { role: 'TOOL', parts: [{ toolResult: { callId: 'c1', content: 'found it' } }] },
      { role: 'ASSISTANT', text: 'done' },
      { role: 'USER', text: 'next' },
    ]);
    await hide(s.id, [s.messages[1].id], 'noise');
    const ctx = await assemble(s.id);
    expect(decisionAt(ctx, 1).decision).toBe('HIDDEN');
    expect(decisionAt(ctx, 2).decision).toBe('DROPPED_TOOL_PAIR');
    expect(decisionAt(ctx, 2).reason).toContain('is hidden');
    await hide(s.id, [s.messages[0].id, s.messages[4].id], 'all of them');
    const refused = await gqlError(app, ASSEMBLE, { input: { sessionId: s.id } });
    expect(refused.code).toBe('BAD_USER_INPUT');
    expect(refused.message).toContain('hidden');
  });

  it('decides hidden messages before a token window as HIDDEN, and a hidden message costs the window nothing', async () => {
    // A huge message that is hidden must not stop the window early: everything else fits.
    const small = chat(40);
    const s = await createSession([...small, { role: 'ASSISTANT', text: 'x '.repeat(6_000) }, { role: 'USER', text: 'last' }]);
    const full = await assemble(s.id, { maxTokens: 3_000 });
    expect(full.decisions.filter((d) => d.decision === 'DROPPED_BUDGET').length).toBeGreaterThan(0);
    await hide(s.id, [s.messages[40].id], 'too long');
    const ctx = await assemble(s.id, { maxTokens: 3_000 });
    expect(ctx.decisions.filter((d) => d.decision === 'DROPPED_BUDGET')).toEqual([]);
    expect(decisionAt(ctx, 40).decision).toBe('HIDDEN');
    expect(ctx.messages.filter((m) => m.kind === 'MESSAGE')).toHaveLength(41);

    // A tight budget: old messages are decided without being loaded, a hidden one among them says so.
    await hide(s.id, [s.messages[3].id], 'old');
    const tight = await assemble(s.id, { maxTokens: 60 });
    expect(decisionAt(tight, 3)).toMatchObject({ decision: 'HIDDEN', reason: 'Hidden by hideMessages: old' });
    expect(decisionAt(tight, 2).decision).toBe('DROPPED_BUDGET');
    expect(tight.droppedMessageCount).toBe(tight.decisions.filter((d) => d.decision.startsWith('DROPPED_')).length);
  });
});

describe('redactMessage / unredactMessage', () => {
  it('sends the replacement, counted exactly, while the original stays readable and flagged', async () => {
    const secret = 'my key is sk-live-0123456789abcdef, do not share';
    const s = await createSession([
      { role: 'USER', text: secret },
      { role: 'ASSISTANT', text: 'noted' },
      { role: 'USER', text: 'go on' },
    ]);
    const replacement = 'The user shared an API key (removed).';
    const { redactMessage } = await redact(s.messages[0].id, replacement);
    expect(redactMessage.message).toMatchObject({
      redacted: true,
      text: secret,
      redaction: { replacement, tokenCount: countTokens(replacement, 'O200K_BASE') },
    });
    const listed = await messagesOf(s.id);
    expect(listed[0]).toMatchObject({ text: secret, redacted: true });
    expect(Date.parse((listed[0] as unknown as { redaction: { redactedAt: string } }).redaction.redactedAt)).toBeGreaterThan(0);

    const ctx = await assemble(s.id);
    expect(JSON.stringify(ctx.payload)).not.toContain('sk-live');
    expect(ctx.messages[0].text).toBe(replacement);
    // Exactly what the same session with the replacement written in the first place costs.
    const twin = await createSession([
      { role: 'USER', text: replacement },
      { role: 'ASSISTANT', text: 'noted' },
      { role: 'USER', text: 'go on' },
    ]);
    for (const encoding of ['O200K_BASE', 'CL100K_BASE']) {
      const [a, b] = [await assemble(s.id, { encoding }), await assemble(twin.id, { encoding })];
      expect(a.tokenCount).toBe(b.tokenCount);
      expect(a.messages.map((m) => m.tokenCount)).toEqual(b.messages.map((m) => m.tokenCount));
    }

    const un = await gqlOk<{ unredactMessage: { message: Msg } }, unknown>(app, UNREDACT, { input: { messageId: s.messages[0].id } });
    expect(un.unredactMessage.message.redacted).toBe(false);
    expect(JSON.stringify((await assemble(s.id)).payload)).toContain('sk-live');
  });

  it('redacts a tool result and keeps the round intact, and refuses a generating message', async () => {
    const s = await createSession([
      { role: 'USER', text: 'read it' },
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c1', name: 'read', arguments: { path: '/secret' } } }] },
      { role: 'TOOL', parts: [{ toolResult: { callId: 'c1', content: 'PASSWORD=hunter2' } }] },
      { role: 'USER', text: 'thanks' },
    ]);
    await redact(s.messages[2].id, '[file content removed]');
    const ctx = await assemble(s.id);
    const payload = JSON.stringify(ctx.payload);
    expect(payload).not.toContain('hunter2');
    expect(payload).toContain('[file content removed]');
    expect(ctx.decisions.map((d) => d.decision)).toEqual(['KEPT', 'KEPT', 'KEPT', 'KEPT']);

    const [generating] = await append(s.id, [{ role: 'ASSISTANT', text: 'stream', generating: true }]);
    const refused = await gqlError(app, REDACT, { input: { messageId: generating.id, replacement: 'x' } });
    expect(refused.code).toBe('BAD_USER_INPUT');
  });
});

describe('stripToolOutputs', () => {
  it('stubs every tool result before the index, whatever keepToolCallRounds says', async () => {
    const round = (n: number, isError = false) => [
      { role: 'USER', text: `q${n}` },
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: `c${n}`, name: 'run', arguments: {} } }] },
      { role: 'TOOL', parts: [{ toolResult: { callId: `c${n}`, content: `output ${n} `.repeat(50), isError } }] },
    ];
    const s = await createSession([...round(0, true), ...round(1), ...round(2), { role: 'USER', text: 'end' }]);
    const before = await assemble(s.id, { keepToolCallRounds: 10 });
    expect(before.elidedToolResultCount).toBe(0);
    const stripped = await gqlOk<{ stripToolOutputs: { toolOutputsStrippedUpto: number } }, unknown>(app, STRIP, {
      input: { sessionId: s.id, uptoIndex: 6 },
    });
    expect(stripped.stripToolOutputs.toolOutputsStrippedUpto).toBe(6);
    const ctx = await assemble(s.id, { keepToolCallRounds: 10 });
    expect(ctx.elidedToolResultCount).toBe(2);
    expect(decisionAt(ctx, 2)).toMatchObject({ decision: 'ELIDED' });
    expect(decisionAt(ctx, 5).reason).toContain('stripToolOutputs');
    expect(decisionAt(ctx, 8).decision).toBe('KEPT');
    expect(ctx.tokenCount).toBeLessThan(before.tokenCount);
    // A smaller index changes nothing and writes nothing.
    const rows = await transformRows(s.id);
    await gqlOk(app, STRIP, { input: { sessionId: s.id, uptoIndex: 3 } });
    expect(await transformRows(s.id)).toBe(rows);
  });
});

describe('inheritance across forks', () => {
  it('a fork inherits what its parent had at the fork, before the cut; later ones and its own stay on their side (forks of forks)', async () => {
    // R: U0 A1 U2 A3 U4 A5 U6 A7
    const r = await createSession(chat(8, 'r'));
    const id = (i: number) => r.messages[i].id;
    await hide(r.id, [id(1)], 'in R before F1');
    await hide(r.id, [id(7)], 'beyond the cut');
    await gqlOk(app, STRIP, { input: { sessionId: r.id, uptoIndex: 8 } });

    const f1 = await fork(r.id, 6);
    expect(f1.toolOutputsStrippedUpto).toBe(6);
    const f1Own = await append(f1.id, chat(4, 'f'));
    expect(hiddenIndexes(await messagesOf(f1.id))).toEqual([1]);

    await hide(r.id, [id(3)], 'in R after F1');
    await unhide(f1.id, [id(1)]);
    await redact(id(2), 'redacted in F1', f1.id);
    await hide(f1.id, [f1Own[1].id], 'F1 own');
    expect(hiddenIndexes(await messagesOf(r.id))).toEqual([1, 3, 7]);
    expect(redactedIndexes(await messagesOf(r.id))).toEqual([]);
    expect(hiddenIndexes(await messagesOf(f1.id))).toEqual([7]);
    expect(redactedIndexes(await messagesOf(f1.id))).toEqual([2]);

    // F2 = fork of F1 at its own U8: sees R's U0..A5 and F1's U6 A7.
    const f2 = await fork(f1.id, 8);
    await hide(f1.id, [id(5)], 'in F1 after F2');
    await hide(f2.id, [id(0)], 'F2 own on a root message');
    const f2Messages = await messagesOf(f2.id);
    expect(hiddenIndexes(f2Messages)).toEqual([0, 7]);
    expect(redactedIndexes(f2Messages)).toEqual([2]);
    expect(hiddenIndexes(await messagesOf(f1.id))).toEqual([5, 7]);
    expect(hiddenIndexes(await messagesOf(r.id))).toEqual([1, 3, 7]);

    const ctx = await assemble(f2.id);
    expect(ctx.decisions.map((d) => d.decision)).toEqual(['HIDDEN', 'KEPT', 'KEPT', 'KEPT', 'KEPT', 'KEPT', 'KEPT', 'HIDDEN']);
    expect(ctx.messages.find((m) => m.sourceIndex === 2)!.text).toBe('redacted in F1');
    const rCtx = await assemble(r.id);
    expect(rCtx.messages.find((m) => m.sourceIndex === 2)!.text).toBe('r2 question');

    // A message of the parent's own past the fork's cut, or of a sibling, is not in the fork's view.
    const refused = await gqlError(app, HIDE, { input: { sessionId: f2.id, messageIds: [f1Own[3].id], reason: 'x' } });
    expect(refused.code).toBe('NOT_FOUND');
    expect(refused.message).toContain(f1Own[3].id);
  });
});

describe('hasNewTransforms', () => {
  it('says whether a transform or compaction was added since the last recorded context (a fork compares with its parent)', async () => {
    const s = await createSession(chat(5));
    const turn = async (sessionId: string) => {
      const created = await gqlOk<{ startTurn: { id: string } }, unknown>(
        app,
        'mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }',
        { input: { sessionId, agentIds: ['a'], initiator: { kind: 'USER' } } },
      );
      return created.startTurn.id;
    };
    const finish = (turnId: string) =>
      gqlOk(app, 'mutation ($input: CompleteAgentInput!) { completeAgent(input: $input) { id } }', {
        input: { turnId, agentId: 'a', success: true },
      });

    expect((await assemble(s.id)).hasNewTransforms).toBe(false);
    const t1 = await turn(s.id);
    expect((await assemble(s.id, { turnId: t1 })).hasNewTransforms).toBe(false);
    await finish(t1);
    expect((await assemble(s.id)).hasNewTransforms).toBe(false);
    await hide(s.id, [s.messages[1].id], 'x');
    expect((await assemble(s.id)).hasNewTransforms).toBe(true);
    const t2 = await turn(s.id);
    expect((await assemble(s.id, { turnId: t2 })).hasNewTransforms).toBe(true);
    await finish(t2);
    expect((await assemble(s.id)).hasNewTransforms).toBe(false);
    await gqlOk(app, 'mutation ($input: CompactSessionInput!) { compactSession(input: $input) { id } }', {
      input: { sessionId: s.id, uptoIndex: 2, summary: 'earlier' },
    });
    const compacted = await assemble(s.id);
    expect(compacted.hasNewTransforms).toBe(true);
    expect(compacted.hasCompression).toBe(true);

    const f = await fork(s.id, 4);
    expect((await assemble(f.id)).hasNewTransforms).toBe(true);
    const t3 = await turn(s.id);
    await assemble(s.id, { turnId: t3 });
    const f2 = await fork(s.id, 4);
    expect((await assemble(f2.id)).hasNewTransforms).toBe(false);
    await redact(s.messages[0].id, 'r', f2.id);
    expect((await assemble(f2.id)).hasNewTransforms).toBe(true);
  });
});

describe('events', () => {
  it('every transform is an entry of the session event log: replayed with afterSequence, then live', async () => {
    const s = await createSession([
      ...chat(4),
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c', name: 't', arguments: {} } }] },
      { role: 'TOOL', parts: [{ toolResult: { callId: 'c', content: 'r' } }] },
      { role: 'USER', text: 'end' },
    ]);
    await hide(s.id, [s.messages[1].id, s.messages[2].id], 'why');
    await unhide(s.id, [s.messages[2].id]);
    await redact(s.messages[3].id, 'gone');
    await gqlOk(app, UNREDACT, { input: { messageId: s.messages[3].id } });
    const events = subscribeSse(
      (url, init) => Promise.resolve(app.yoga.fetch(url, init)),
      `subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 7) {
        __typename sequence
        ... on MessagesHidden { reason messages { index hidden } }
        ... on MessagesUnhidden { messages { index hidden } }
        ... on MessageRedacted { index message { redacted text } }
        ... on MessageUnredacted { index message { redacted } }
        ... on ToolOutputsStripped { uptoIndex }
      } }`,
      { id: s.id },
      (data) => data.sessionEvents as Record<string, unknown>,
    );
    try {
      await events.collector.until((e) => e.length >= 4, 10_000, 'the replayed transform events');
      await gqlOk(app, STRIP, { input: { sessionId: s.id, uptoIndex: 6 } });
      const all = await events.collector.until((e) => e.length >= 5, 10_000, 'the live strip event');
      expect(all).toEqual([
        {
          __typename: 'MessagesHidden',
          sequence: 8,
          reason: 'why',
          messages: [
            { index: 1, hidden: true },
            { index: 2, hidden: false },
          ],
        },
        { __typename: 'MessagesUnhidden', sequence: 9, messages: [{ index: 2, hidden: false }] },
        { __typename: 'MessageRedacted', sequence: 10, index: 3, message: { redacted: false, text: 'm3 answer' } },
        { __typename: 'MessageUnredacted', sequence: 11, index: 3, message: { redacted: false } },
        { __typename: 'ToolOutputsStripped', sequence: 12, uptoIndex: 6 },
      ]);
    } finally {
      events.unsubscribe();
    }
  });
});

describe('validation and concurrency', () => {
  it('refuses unknown ids and bad input with contract codes, naming the opaque ids, and writes nothing', async () => {
    const s = await createSession(chat(3));
    const other = await createSession(chat(2));
    const missing = globalIdOf('Message', '0190f000-0000-7000-8000-000000000000');
    const cases: [unknown, string, string?][] = [
      [{ sessionId: s.id, messageIds: [missing], reason: 'x' }, 'NOT_FOUND', missing],
      [{ sessionId: s.id, messageIds: [s.messages[0].id, other.messages[1].id], reason: 'x' }, 'NOT_FOUND', other.messages[1].id],
      [
        { sessionId: globalIdOf('Session', '0190f000-0000-7000-8000-000000000000'), messageIds: [s.messages[0].id], reason: 'x' },
        'NOT_FOUND',
      ],
      [{ sessionId: s.id, messageIds: [], reason: 'x' }, 'BAD_USER_INPUT'],
      [{ sessionId: s.id, messageIds: [s.messages[0].id], reason: '  ' }, 'BAD_USER_INPUT'],
      [{ sessionId: s.id, messageIds: [s.messages[0].id], reason: 'x'.repeat(1_001) }, 'BAD_USER_INPUT'],
      [{ sessionId: s.id, messageIds: [s.messages[0].id], reason: 'a\u0000b' }, 'BAD_USER_INPUT'],
      [{ sessionId: s.id, messageIds: ['not an id'], reason: 'x' }, 'BAD_USER_INPUT'],
    ];
    for (const [input, code, named] of cases) {
      const refused = await gqlError(app, HIDE, { input });
      expect(refused.code, JSON.stringify(input).slice(0, 200)).toBe(code);
      if (named) expect(refused.message).toContain(named);
      expect(refused.message).not.toContain(rawIdOf(s.messages[0].id));
    }
    const redactCases: [unknown, string][] = [
      [{ messageId: missing, replacement: 'x' }, 'NOT_FOUND'],
      [{ messageId: s.messages[0].id, sessionId: other.id, replacement: 'x' }, 'NOT_FOUND'],
      [{ messageId: s.messages[0].id, replacement: '' }, 'BAD_USER_INPUT'],
      [{ messageId: s.messages[0].id, replacement: 'x\u0000' }, 'BAD_USER_INPUT'],
    ];
    for (const [input, code] of redactCases) expect((await gqlError(app, REDACT, { input })).code).toBe(code);
    for (const uptoIndex of [0, 4, -1])
      expect((await gqlError(app, STRIP, { input: { sessionId: s.id, uptoIndex } })).code).toBe('BAD_USER_INPUT');
    expect(await transformRows(s.id)).toBe(0);
    const row = await app.runtime.db.prisma.session.findUniqueOrThrow({ where: { id: rawIdOf(s.id) } });
    expect([row.transformCount, row.eventSequence]).toEqual([0, 3]);
  });

  it('concurrent transforms on one session are numbered without gaps and logged in order', async () => {
    const s = await createSession(chat(24));
    const writes = s.messages.map((m, i) =>
      i % 3 === 0
        ? gql(app, HIDE, { input: { sessionId: s.id, messageIds: [m.id], reason: `r${i}` } })
        : gql(app, REDACT, { input: { messageId: m.id, replacement: `x${i}` } }),
    );
    const results = await Promise.all(writes);
    expect(results.flatMap((r) => r.errors ?? [])).toEqual([]);
    const rows = await app.runtime.db.prisma.messageTransform.findMany({
      where: { sessionId: rawIdOf(s.id) },
      orderBy: { ordinal: 'asc' },
    });
    expect(rows.map((r) => r.ordinal)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    const session = await app.runtime.db.prisma.session.findUniqueOrThrow({ where: { id: rawIdOf(s.id) } });
    expect(session.transformCount).toBe(24);
    const events = await app.runtime.db.prisma.sessionEvent.findMany({ where: { sessionId: rawIdOf(s.id) }, orderBy: { sequence: 'asc' } });
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 48 }, (_, i) => i + 1));
    const listed = await messagesOf(s.id);
    expect(hiddenIndexes(listed)).toEqual([0, 3, 6, 9, 12, 15, 18, 21]);
    expect(redactedIndexes(listed)).toHaveLength(16);
  });
});

describe('the timeline of a fork', () => {
  it("shows the fork's own view of its inherited messages: its transforms, not its parent's, and the fork as their session", async () => {
    const parent = await createSession([
      { role: 'USER', text: 'first question' },
      { role: 'ASSISTANT', text: 'first answer' },
      { role: 'USER', text: 'second question' },
    ]);
    const child = await fork(parent.id, 2);
    // Hidden in the fork only, and redacted in the parent only after the fork.
    await hide(child.id, [parent.messages[1].id], 'noise');
    await redact(parent.messages[0].id, '[gone]', parent.id);
    const TIMELINE = `query ($id: ID!) { node(id: $id) { ... on Session { timeline(first: 10) { edges { node { index session { id } message { ${MESSAGE} } } } } } } }`;
    const timeline = async (id: string) =>
      (
        await gqlOk<{ node: { timeline: { edges: { node: { index: number; session: { id: string }; message: Msg } }[] } } }, unknown>(
          app,
          TIMELINE,
          { id },
        )
      ).node.timeline.edges.map((e) => e.node);
    const items = await timeline(child.id);
    expect(items.map((i) => i.session.id)).toEqual([child.id, child.id]);
    expect(items.map((i) => [i.message.hidden, i.message.redacted])).toEqual([
      [false, false],
      [true, false],
    ]);
    const parentItems = await timeline(parent.id);
    expect(parentItems.map((i) => [i.message.hidden, i.message.redacted])).toEqual([
      [false, true],
      [false, false],
      [false, false],
    ]);
  });
});
