import { encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { createHash } from 'node:crypto';
import { canonicalJson, runAssembly } from '../../src/domain/assembly/index.js';
import { visibleSegments } from '../../src/domain/lineage.js';
import type { StoredPart, TokenEncoding } from '../../src/domain/types.js';
import { AssemblyCaches } from '../../src/caches/index.js';
import { DEFAULT_CACHE_CONFIG } from '../../src/caches/sizes.js';
import { latestCompaction } from '../../src/db/stores/compactions.js';
import { AssemblyService } from '../../src/services/assembly.js';
import { segmentsWhere } from '../../src/db/stores/messages.js';
import { describe, expect, it } from 'vitest';
import { graphql } from '../generated/index.js';
import { backend, gql, gqlError, gqlOk, rawIdOf as rawId, globalIdOf as globalId, type TestApp, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession, DeleteSession, ForkSession, UpdateMessage, UpdateSession } from '../helpers/documents.js';

const Assemble = graphql(`
  mutation Assemble($input: AssembleContextInput!) {
    assembleContext(input: $input) {
      tokenCount
      maxTokens
      truncated
      summaryIncluded
      hasCompression
      droppedMessageCount
      elidedToolResultCount
      isFork
      isFirstTurn
      hasConnectorSwap
      contextHash
      payload
      messages {
        role
        kind
        text
        sourceMessageId
        sourceIndex
        tokenCount
      }
      decisions {
        messageId
        index
        decision
        reason
      }
      attachmentProblems {
        name
        problem
        detail
      }
    }
  }
`);

const Compact = graphql(`
  mutation Compact($input: CompactSessionInput!) {
    compactSession(input: $input) {
      id
      messageCount
    }
  }
`);

const TurnContext = graphql(`
  query TurnContext($id: ID!) {
    node(id: $id) {
      ... on Turn {
        number
        context {
          contextHash
          tokenCount
          isFirstTurn
        }
      }
    }
  }
`);

let app: TestApp;

useTestApp((built) => {
  app = built;
});

/** A session of `n` alternating USER/ASSISTANT messages "m0", "m1", …; returns its ID. */
async function conversation(n: number, settings: Record<string, unknown> = {}) {
  const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? 'USER' : 'ASSISTANT', text: `m${i}` }) as const);
  const data = await gqlOk(app, CreateSession, { input: { title: 'ctx', settings, messages } });
  return data.createSession.id;
}

async function assemble(sessionId: string, extra: Record<string, unknown> = {}) {
  const data = await gqlOk(app, Assemble, { input: { sessionId, ...extra } });
  return data.assembleContext;
}

const summaryText = (ctx: Awaited<ReturnType<typeof assemble>>) => ctx.messages.find((m) => m.kind === 'SUMMARY')?.text ?? null;
const sourceIndexes = (ctx: Awaited<ReturnType<typeof assemble>>) =>
  ctx.messages.filter((m) => m.kind === 'MESSAGE').map((m) => m.sourceIndex);

async function startTurn(sessionId: string, number: number) {
  const turn = await app.runtime.db.prisma.turn.create({
    data: { sessionId: rawId(sessionId), number, initiatorKind: 'USER' },
  });
  return globalId('Turn', turn.id);
}

type MessageRow = Awaited<ReturnType<TestApp['runtime']['db']['prisma']['message']['findMany']>>[number];

/** Assembles every one of `rows` (a session's visible messages, oldest first) with the pure pipeline. */
function assembleEverything(
  rows: MessageRow[],
  compaction: { id: string; uptoIndex: number; summary: string } | null,
  options: Parameters<typeof runAssembly>[0]['options'],
  isFork = false,
) {
  return runAssembly({
    messages: rows.map((r) => ({
      id: r.id,
      index: r.position,
      role: r.role,
      parts: r.parts as unknown as StoredPart[],
      generating: r.generating,
      tokens: { O200K_BASE: r.tokensO200k!, CL100K_BASE: r.tokensCl100k! },
    })),
    compaction: compaction ? { id: compaction.id, uptoIndex: compaction.uptoIndex, summary: compaction.summary, tokens: null } : null,
    attachments: new Map(),
    options,
    flags: { isFork, isFirstTurn: true, hasConnectorSwap: false },
  });
}

describe(`assembleContext and compactSession (${backend.label})`, () => {
  it('assembles every message in order when nothing limits it, and explains each one', async () => {
    const id = await conversation(4);
    const ctx = await assemble(id);
    expect(sourceIndexes(ctx)).toEqual([0, 1, 2, 3]);
    expect(ctx.decisions.map((d) => d.decision)).toEqual(['KEPT', 'KEPT', 'KEPT', 'KEPT']);
    expect(ctx).toMatchObject({ truncated: false, summaryIncluded: false, droppedMessageCount: 0, isFork: false, isFirstTurn: true });
  });

  it('keeps the newest messages within maxTokens and refuses a budget below the newest user message', async () => {
    const id = await conversation(21);
    const full = await assemble(id);
    const small = await assemble(id, { maxTokens: Math.floor(full.tokenCount / 2) });
    expect(small.truncated).toBe(true);
    expect(small.tokenCount).toBeLessThanOrEqual(Math.floor(full.tokenCount / 2));
    const kept = sourceIndexes(small);
    expect(kept[kept.length - 1]).toBe(20);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 21 - kept.length + i));
    expect(small.droppedMessageCount).toBe(21 - kept.length);
    expect(small.decisions.filter((d) => d.decision === 'DROPPED_BUDGET')).toHaveLength(21 - kept.length);

    const tooSmall = await gqlError(app, Assemble, { input: { sessionId: id, maxTokens: 2 } });
    expect(tooSmall.code).toBe('CONTEXT_BUDGET_TOO_SMALL');
  });

  it('counts OpenAI chat tokens exactly as the provider does for a text conversation', async () => {
    const id = await conversation(6);
    const ctx = await assemble(id, { format: 'OPENAI_CHAT', system: 'You are terse.' });
    const payload = ctx.payload as { messages: { role: 'system' | 'user' | 'assistant'; content: string }[] };
    expect(ctx.tokenCount).toBe(encodeChat(payload.messages, 'gpt-4o').length);
  });

  it('refuses bad options with BAD_USER_INPUT and unknown sessions with NOT_FOUND', async () => {
    const id = await conversation(2);
    for (const input of [
      { maxTokens: 0 },
      { maxTokens: -5 },
      { maxMessages: 0 },
      { keepToolCallRounds: -1 },
      { turnContext: ['not', 'an', 'object'] },
      { turnContext: 'text' },
    ]) {
      const { code } = await gqlError(app, Assemble, { input: { sessionId: id, ...input } });
      expect(code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
    }
    const badEnum = await gql(app, Assemble, { input: { sessionId: id, encoding: 'P50K' } } as never);
    expect(badEnum.errors?.[0].message).toMatch(/P50K/);
    const noUser = await gqlOk(app, CreateSession, { input: { messages: [{ role: 'SYSTEM', text: 'only instructions' }] } });
    expect((await gqlError(app, Assemble, { input: { sessionId: noUser.createSession.id } })).code).toBe('BAD_USER_INPUT');
    const unknown = globalId('Session', '01890000-0000-7000-8000-000000000000');
    expect((await gqlError(app, Assemble, { input: { sessionId: unknown } })).code).toBe('NOT_FOUND');
  });

  it('never writes to the session', async () => {
    const id = await conversation(4);
    const prisma = app.runtime.db.prisma;
    const before = await prisma.session.findUniqueOrThrow({ where: { id: rawId(id) } });
    const messagesBefore = await prisma.message.findMany({ where: { sessionId: rawId(id) }, orderBy: { position: 'asc' } });
    await assemble(id, { maxTokens: 30, system: 'x', turnContext: { a: 1 } });
    const after = await prisma.session.findUniqueOrThrow({ where: { id: rawId(id) } });
    expect(after).toEqual(before);
    expect(await prisma.message.findMany({ where: { sessionId: rawId(id) }, orderBy: { position: 'asc' } })).toEqual(messagesBefore);
  });

  it('validates compactions and writes nothing when refusing', async () => {
    const id = await conversation(4);
    for (const input of [
      { uptoIndex: 0, summary: 's' },
      { uptoIndex: 5, summary: 's' },
      { uptoIndex: 2, summary: '   ' },
    ]) {
      expect((await gqlError(app, Compact, { input: { sessionId: id, ...input } })).code).toBe('BAD_USER_INPUT');
    }
    expect(await app.runtime.db.prisma.compaction.count({ where: { sessionId: rawId(id) } })).toBe(0);
  });

  it('replaces the compacted messages by the summary, first', async () => {
    const id = await conversation(6);
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 4, summary: 'They greeted.' } });
    const ctx = await assemble(id, { system: 'S' });
    expect(ctx.summaryIncluded).toBe(true);
    expect(ctx.messages[0].kind).toBe('SYSTEM');
    expect(ctx.messages[1]).toMatchObject({ kind: 'SUMMARY' });
    expect(summaryText(ctx)).toContain('They greeted.');
    expect(sourceIndexes(ctx)).toEqual([4, 5]);
    expect(ctx.decisions.slice(0, 4).map((d) => d.decision)).toEqual(['SUMMARIZED', 'SUMMARIZED', 'SUMMARIZED', 'SUMMARIZED']);
    // The latest compaction wins.
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 2, summary: 'Later, shorter.' } });
    expect(summaryText(await assemble(id))).toContain('Later, shorter.');
  });

  it('assembles a session whose compaction covers every user message, and a fork whose inherited one covers all it has', async () => {
    const id = await conversation(5);
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 5, summary: 'Everything so far.' } });
    // A fork at messageIndex 4 holds messages [0, 4), all covered by the inherited compaction.
    const parent = await conversation(6);
    await gqlOk(app, Compact, { input: { sessionId: parent, uptoIndex: 4, summary: 'All of it.' } });
    const inherited = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 4 } })).forkSession.session.id;
    await gqlOk(app, AppendMessages, { input: { sessionId: inherited, messages: [{ role: 'ASSISTANT', text: 'after' }] } });
    const bare = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 4 } })).forkSession.session.id;
    for (const sessionId of [id, inherited, bare]) {
      for (const extra of [
        {},
        { maxTokens: 200 },
        { format: 'OPENAI_CHAT' },
        { format: 'ANTHROPIC_MESSAGES' },
        { format: 'ANTHROPIC_MESSAGES', maxTokens: 200 },
      ]) {
        const ctx = await assemble(sessionId, extra);
        expect(ctx.hasCompression).toBe(true);
        expect(ctx.summaryIncluded).toBe(true);
        expect(ctx.messages[0].kind).toBe('SUMMARY');
        if (extra.format === 'ANTHROPIC_MESSAGES') {
          const payload = ctx.payload as { messages: Array<{ role: string; content: Array<{ text?: string }> }> };
          expect(payload.messages[0].role).toBe('user');
          expect(payload.messages[0].content[0].text).toBe(ctx.messages[0].text);
        }
      }
    }
    expect(sourceIndexes(await assemble(inherited))).toEqual([4]);
    expect((await assemble(id)).decisions.map((d) => d.decision)).toEqual(Array(5).fill('SUMMARIZED'));
  });

  it('stores tool call ids and tool names as sent; refuses only blank ones, writing nothing', async () => {
    const id = await conversation(1);
    for (const toolCall of [
      { callId: ' ', name: 'search' },
      { callId: 'c1', name: '' },
    ]) {
      const error = await gqlError(app, AppendMessages, {
        input: { sessionId: id, messages: [{ role: 'ASSISTANT', parts: [{ toolCall }] }] },
      });
      expect(error.code).toBe('BAD_USER_INPUT');
    }
    expect(await app.runtime.db.prisma.message.count({ where: { sessionId: rawId(id) } })).toBe(1);
    // What models produce is stored as it is (the formats map it: test/integration/interop.test.ts).
    await gqlOk(app, AppendMessages, {
      input: {
        sessionId: id,
        messages: [
          {
            role: 'ASSISTANT',
            parts: [{ toolCall: { callId: 'call.1', name: 'files.read' } }, { toolCall: { callId: 'c 2', name: 'x'.repeat(65) } }],
          },
        ],
      },
    });
  });

  it('gives a fork the compactions its parent had before the cut, and never one made after', async () => {
    const parent = await conversation(10);
    await gqlOk(app, Compact, { input: { sessionId: parent, uptoIndex: 4, summary: 'P-early' } });
    await gqlOk(app, Compact, { input: { sessionId: parent, uptoIndex: 8, summary: 'P-beyond-cut' } });
    const fork = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 6 } })).forkSession.session.id;

    // The range ending after the cut (8 > 6) is not inherited; the earlier one ending before it is.
    const forkCtx = await assemble(fork);
    expect(forkCtx.isFork).toBe(true);
    expect(summaryText(forkCtx)).toContain('P-early');
    expect(sourceIndexes(forkCtx)).toEqual([4, 5]);

    // Made on the parent after the fork: stays on the parent's side.
    await gqlOk(app, Compact, { input: { sessionId: parent, uptoIndex: 5, summary: 'P-after-fork' } });
    expect(summaryText(await assemble(parent))).toContain('P-after-fork');
    expect(summaryText(await assemble(fork))).toContain('P-early');

    // Made on the fork: stays on the fork's side.
    await gqlOk(app, Compact, { input: { sessionId: fork, uptoIndex: 3, summary: 'F-own' } });
    expect(summaryText(await assemble(fork))).toContain('F-own');
    expect(summaryText(await assemble(parent))).toContain('P-after-fork');

    // A fork cut before every compaction's end inherits none; a fork of the fork inherits the fork's own.
    const early = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 2 } })).forkSession.session.id;
    expect((await assemble(early)).summaryIncluded).toBe(false);
    await gqlOk(app, AppendMessages, {
      input: {
        sessionId: fork,
        messages: [
          { role: 'USER', text: 'f6' },
          { role: 'ASSISTANT', text: 'f7' },
        ],
      },
    });
    const grandchild = (await gqlOk(app, ForkSession, { input: { sessionId: fork, messageIndex: 6 } })).forkSession.session.id;
    expect(summaryText(await assemble(grandchild))).toContain('F-own');
  });

  it('records the context on a turn, with first-turn and connector-swap flags', async () => {
    const id = await conversation(2, { model: 'gpt-4o' });
    const turn1 = await startTurn(id, 1);
    const first = await assemble(id, { turnId: turn1 });
    expect(first).toMatchObject({ isFirstTurn: true, hasConnectorSwap: false });
    const recorded = await gqlOk(app, TurnContext, { id: turn1 });
    expect(recorded.node).toMatchObject({ number: 1, context: { contextHash: first.contextHash, tokenCount: first.tokenCount } });

    await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: 'again' }] } });
    const turn2 = await startTurn(id, 2);
    expect(await assemble(id, { turnId: turn2 })).toMatchObject({ isFirstTurn: false, hasConnectorSwap: false });

    await gqlOk(app, UpdateSession, { input: { sessionId: id, settings: { model: 'claude-sonnet' } } });
    const turn3 = await startTurn(id, 3);
    expect(await assemble(id, { turnId: turn3 })).toMatchObject({ hasConnectorSwap: true });

    const other = await conversation(2);
    expect((await gqlError(app, Assemble, { input: { sessionId: other, turnId: turn1 } })).code).toBe('NOT_FOUND');
  });

  it('reports an attachment that is gone instead of dropping it silently', async () => {
    const created = await gqlOk(app, CreateSession, {
      input: {
        messages: [
          {
            role: 'USER',
            parts: [{ text: { text: 'see file' } }, { attachment: { name: 'a.txt', mimeType: 'text/plain', content: 'alpha' } }],
          },
          {
            role: 'USER',
            parts: [{ attachment: { name: 'b.txt', mimeType: 'text/plain', content: 'beta' } }, { text: { text: 'and this' } }],
          },
        ],
      },
    });
    const id = created.createSession.id;
    const ok = await assemble(id);
    expect(ok.attachmentProblems).toEqual([]);
    expect(ok.messages.map((m) => m.text).join('\n')).toContain('alpha');
    await app.runtime.db.prisma.attachment.deleteMany({ where: { sessionId: rawId(id), name: 'a.txt' } });
    const missing = await assemble(id);
    expect(missing.attachmentProblems).toEqual([expect.objectContaining({ name: 'a.txt', problem: 'MISSING' })]);
    expect(missing.messages.map((m) => m.text).join('\n')).toContain('beta');
  });

  it('gives the same hash for the same inputs and another for other inputs, one a client can recompute', async () => {
    const id = await conversation(4);
    const a = await assemble(id, { format: 'ANTHROPIC_MESSAGES' });
    const b = await assemble(id, { format: 'ANTHROPIC_MESSAGES' });
    const c = await assemble(id, { format: 'ANTHROPIC_MESSAGES', system: 'different' });
    expect(a.contextHash).toMatch(/^[0-9a-f]{64}$/);
    expect(b.contextHash).toBe(a.contextHash);
    expect(c.contextHash).not.toBe(a.contextHash);
    // From the payload as received: SHA-256 of the RFC 8785 form of { encoding, format, payload }.
    for (const [format, served] of [
      ['ANTHROPIC_MESSAGES', b],
      ['OPENAI_CHAT', await assemble(id, { format: 'OPENAI_CHAT' })],
    ] as const) {
      const canonical = canonicalJson({ encoding: 'O200K_BASE', format, payload: served.payload });
      expect(createHash('sha256').update(canonical).digest('hex'), format).toBe(served.contextHash);
    }
  });

  it('loads only the messages that can fit, and gives exactly what assembling all of them gives', async () => {
    const created = await gqlOk(app, CreateSession, { input: { title: 'window' } });
    const id = created.createSession.id;
    for (let batch = 0; batch < 6; batch++) {
      const messages = [];
      for (let i = 0; i < 10; i++) {
        const n = batch * 10 + i;
        messages.push(
          { role: 'USER' as const, text: `Question ${n}: ${'why '.repeat(n % 7)}?` },
          {
            role: 'ASSISTANT' as const,
            parts: [{ text: { text: 'Checking.' } }, { toolCall: { callId: `c${n}`, name: 'search', arguments: { n } } }],
          },
          { role: 'TOOL' as const, parts: [{ toolResult: { callId: `c${n}`, content: `result ${n} `.repeat(20) } }] },
          { role: 'ASSISTANT' as const, text: `Answer ${n}.` },
        );
      }
      await gqlOk(app, AppendMessages, { input: { sessionId: id, messages } });
    }
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 40, summary: 'The first ten questions.' } });
    const prisma = app.runtime.db.prisma;
    const rows = await prisma.message.findMany({ where: { sessionId: rawId(id) }, orderBy: { position: 'asc' } });
    const compaction = await prisma.compaction.findFirstOrThrow({ where: { sessionId: rawId(id) } });
    // 1,000,000: a budget past the whole session pages to its compaction and drops nothing for the budget.
    for (const maxTokens of [120, 400, 1500, 1_000_000]) {
      const served = await assemble(id, { maxTokens, format: 'OPENAI_CHAT', keepToolCallRounds: 1 });
      const full = assembleEverything(rows, compaction, {
        maxTokens,
        maxMessages: null,
        keepToolCallRounds: 1,
        encoding: 'O200K_BASE',
        system: null,
        turnContext: null,
        format: 'OPENAI_CHAT',
        attachmentMaxChars: 20_000,
        contextAttachmentMaxChars: 100_000,
      });
      expect(served.contextHash, `maxTokens ${maxTokens}`).toBe(full.contextHash);
      expect(served.tokenCount).toBe(full.tokenCount);
      expect({ dropped: served.droppedMessageCount, truncated: served.truncated, elided: served.elidedToolResultCount }).toEqual({
        dropped: full.droppedMessageCount,
        truncated: full.truncated,
        elided: full.elidedToolResultCount,
      });
      expect(served.decisions.map((d) => [d.index, d.decision])).toEqual(full.decisions.map((d) => [d.index, d.decision]));
    }
  });

  it('fills the budget past a tool round the pipeline drops for pairing, whatever the paging (the issue 12 example)', async () => {
    // 20 short messages, an assistant tool call with a 1,000-word argument and no result, a user message.
    const messages = [
      ...Array.from({ length: 20 }, (_, i) => ({ role: i % 2 === 0 ? ('USER' as const) : ('ASSISTANT' as const), text: `short ${i}` })),
      { role: 'ASSISTANT' as const, parts: [{ toolCall: { callId: 'big', name: 'write', arguments: { text: 'word '.repeat(1000) } } }] },
      { role: 'USER' as const, text: 'and now?' },
    ];
    const id = (await gqlOk(app, CreateSession, { input: { title: 'unanswered', messages } })).createSession.id;
    // The same with the call's result still being generated.
    const generating = (await gqlOk(app, CreateSession, { input: { title: 'generating', messages: messages.slice(0, 21) } })).createSession
      .id;
    await gqlOk(app, AppendMessages, {
      input: {
        sessionId: generating,
        messages: [
          { role: 'TOOL', generating: true, parts: [{ toolResult: { callId: 'big', content: 'partial' } }] },
          { role: 'USER', text: 'and now?' },
        ],
      },
    });
    const { prisma, sql } = app.runtime.db;
    const small = new AssemblyService(prisma, sql, { first: 4, min: 2, max: 8, margin: 1 });
    for (const sessionId of [id, generating]) {
      const whole = await assemble(sessionId, { format: 'OPENAI_CHAT' });
      const budgeted = await assemble(sessionId, { format: 'OPENAI_CHAT', maxTokens: 500 });
      expect(whole.tokenCount).toBeLessThan(500);
      // Everything eligible fits: the same context as without a budget.
      expect(budgeted.tokenCount).toBe(whole.tokenCount);
      expect(budgeted.contextHash).toBe(whole.contextHash);
      expect(budgeted.truncated).toBe(false);
      expect(budgeted.decisions.slice(0, 20).map((d) => d.decision)).toEqual(Array(20).fill('KEPT'));
      expect(budgeted.decisions[20].decision).toBe('DROPPED_TOOL_PAIR');

      const session = await prisma.session.findUniqueOrThrow({ where: { id: rawId(sessionId) } });
      const rows = await prisma.message.findMany({ where: { sessionId: session.id }, orderBy: { position: 'asc' } });
      for (const [maxTokens, cacheStrategy] of [30, 60, 100, 140, 500].flatMap((m) => [
        [m, 'NEWEST_FIRST'] as const,
        [m, 'STABLE_PREFIX'] as const,
      ])) {
        const options = {
          maxTokens,
          cacheStrategy,
          maxMessages: null,
          keepToolCallRounds: 2,
          encoding: 'O200K_BASE' as const,
          system: null,
          turnContext: null,
          format: 'OPENAI_CHAT' as const,
          attachmentMaxChars: 20_000,
          contextAttachmentMaxChars: 100_000,
        };
        const full = assembleEverything(rows, null, options);
        const served = await small.assemble(session.workspaceId, { sessionId: session.id, ...options });
        expect(served.contextHash, `${maxTokens}`).toBe(full.contextHash);
        expect((await small.decisionsOf(served)).map((d) => d.decision)).toEqual(full.decisions.map((d) => d.decision));
        if (cacheStrategy === 'STABLE_PREFIX') continue;
        // An independent greedy packer over the eligible messages (the short ones and the last user message), newest first.
        const eligible = full.messages.length;
        let budget = maxTokens - 3;
        let kept = 0;
        const costs = [...rows.slice(0, 20), rows[rows.length - 1]].map((r) => r.tokensO200k! + 4).reverse();
        for (const cost of costs) {
          if (cost > budget) break;
          budget -= cost;
          kept++;
        }
        expect(eligible, `${maxTokens}`).toBe(kept);
      }
    }
  });

  it('keeps the leading system message whatever the window, and as the whole assembly does', async () => {
    const messages = [
      { role: 'SYSTEM' as const, text: 'You are terse.' },
      ...Array.from({ length: 40 }, (_, i) => ({
        role: i % 2 === 0 ? ('USER' as const) : ('ASSISTANT' as const),
        text: `m${i} ${'x '.repeat(i)}`,
      })),
    ];
    const id = (await gqlOk(app, CreateSession, { input: { title: 'pinned', messages } })).createSession.id;
    const parentMessages = await assemble(id, { maxMessages: 2 });
    expect(sourceIndexes(parentMessages)).toEqual([0, 39, 40]);
    expect(sourceIndexes(await assemble(id, { maxMessages: 2, keepSystemMessage: false }))).toEqual([39, 40]);
    const fork = (await gqlOk(app, ForkSession, { input: { sessionId: id, messageIndex: 31 } })).forkSession.session.id;
    const { prisma, sql } = app.runtime.db;
    const small = new AssemblyService(prisma, sql, { first: 4, min: 2, max: 8, margin: 1 });
    for (const sessionId of [id, fork]) {
      const session = await prisma.session.findUniqueOrThrow({ where: { id: rawId(sessionId) } });
      const rows = await prisma.message.findMany({ where: segmentsWhere(visibleSegments(session)), orderBy: { position: 'asc' } });
      for (const maxTokens of [60, 120, 200, 1_000]) {
        const options = {
          maxTokens,
          maxMessages: null,
          keepToolCallRounds: 2,
          encoding: 'O200K_BASE' as const,
          system: null,
          turnContext: null,
          format: 'ANTHROPIC_MESSAGES' as const,
          attachmentMaxChars: 20_000,
          contextAttachmentMaxChars: 100_000,
        };
        const full = assembleEverything(rows, null, options, session.parentId !== null);
        const served = await small.assemble(session.workspaceId, { sessionId: session.id, ...options });
        expect(served.contextHash, `${maxTokens}`).toBe(full.contextHash);
        expect(served.messages[0].sourceIndex).toBe(0);
        expect(served.droppedMessageCount).toBe(full.droppedMessageCount);
        expect((await small.decisionsOf(served)).map((d) => [d.index, d.decision])).toEqual(
          full.decisions.map((d) => [d.index, d.decision]),
        );
      }
    }
  });

  it('reads the window in small pages across forks and compactions, and gives exactly what assembling everything gives', async () => {
    // Rounds of four (question, call, result, answer) of varying sizes, so page sizes adapt to costs.
    const rounds = (label: string, from: number, count: number) =>
      Array.from({ length: count }, (_, r) => {
        const n = from + r;
        return [
          { role: 'USER' as const, text: `${label} question ${n}: ${'how '.repeat((n * 7) % 23)}?` },
          {
            role: 'ASSISTANT' as const,
            parts: [{ text: { text: `Looking ${n}.` } }, { toolCall: { callId: `${label}${n}`, name: 'search', arguments: { n } } }],
          },
          { role: 'TOOL' as const, parts: [{ toolResult: { callId: `${label}${n}`, content: `row ${n} `.repeat((n * 13) % 41) } }] },
          { role: 'ASSISTANT' as const, text: `${label} answer ${n} ${'because '.repeat((n * 5) % 17)}` },
        ];
      }).flat();
    const appendRounds = (sessionId: string, label: string, from: number, count: number) =>
      gqlOk(app, AppendMessages, { input: { sessionId, messages: rounds(label, from, count) } });
    const forkAt = async (sessionId: string, messageIndex: number) =>
      (await gqlOk(app, ForkSession, { input: { sessionId, messageIndex } })).forkSession.session.id;

    const root = (await gqlOk(app, CreateSession, { input: { title: 'paged' } })).createSession.id;
    await appendRounds(root, 'r', 0, 30); // 120 messages
    await gqlOk(app, Compact, { input: { sessionId: root, uptoIndex: 40, summary: 'Root, first ten rounds.' } });
    const child = await forkAt(root, 80); // inherits the compaction
    await appendRounds(child, 'c', 20, 10);
    await gqlOk(app, Compact, { input: { sessionId: child, uptoIndex: 100, summary: 'Child, up to 100.' } });
    const grandchild = await forkAt(child, 112); // three segments, the child's compaction inherited
    await appendRounds(grandchild, 'g', 28, 5);
    const early = await forkAt(root, 24); // cut before the root's compaction ends: none inherited
    await appendRounds(early, 'e', 6, 12);

    const { prisma, sql, queries } = app.runtime.db;
    const paging = { first: 4, min: 2, max: 8, margin: 1 };
    // Without the rows cache every page is read; with it, pages come from what earlier assemblies
    // kept, read below and above it as budgets grow and shrink.
    const uncached = new AssemblyService(prisma, sql, paging, new AssemblyCaches({ ...DEFAULT_CACHE_CONFIG, rowsMax: 0 }));
    const cached = new AssemblyService(prisma, sql, paging);
    let pagedStatements = 0;
    for (const sessionId of [root, child, grandchild, early]) {
      const session = await prisma.session.findUniqueOrThrow({ where: { id: rawId(sessionId) } });
      const rows = await prisma.message.findMany({ where: segmentsWhere(visibleSegments(session)), orderBy: { position: 'asc' } });
      expect(rows.map((r) => r.position)).toEqual([...rows.keys()]);
      const compaction = await latestCompaction(sql, session);
      for (const encoding of ['O200K_BASE', 'CL100K_BASE'] as TokenEncoding[]) {
        for (const [paged, maxTokens] of [30, 150, 600, 2_500, 1_000_000].flatMap((budget) => [
          [uncached, budget] as const,
          [cached, budget] as const,
          [cached, Math.ceil(budget / 7)] as const,
        ])) {
          const options = {
            maxTokens,
            maxMessages: null,
            keepToolCallRounds: 1,
            encoding,
            system: 'Be brief.',
            turnContext: null,
            format: 'OPENAI_CHAT' as const,
            attachmentMaxChars: 20_000,
            contextAttachmentMaxChars: 100_000,
          };
          const label = `${session.title} at ${maxTokens} ${encoding}`;
          let full: ReturnType<typeof runAssembly> | null = null;
          let refusal: unknown = null;
          try {
            full = assembleEverything(rows, compaction, options, session.parentId !== null);
          } catch (error) {
            refusal = error;
          }
          queries.reset();
          const request = { sessionId: session.id, ...options };
          if (!full) {
            await expect(paged.assemble(session.workspaceId, request), label).rejects.toMatchObject({
              code: (refusal as { code: string }).code,
            });
            continue;
          }
          const served = await paged.assemble(session.workspaceId, request);
          if (paged === uncached) pagedStatements = Math.max(pagedStatements, queries.count);
          expect(served.contextHash, label).toBe(full.contextHash);
          expect(
            {
              tokens: served.tokenCount,
              dropped: served.droppedMessageCount,
              truncated: served.truncated,
              summary: served.summaryIncluded,
            },
            label,
          ).toEqual({
            tokens: full.tokenCount,
            dropped: full.droppedMessageCount,
            truncated: full.truncated,
            summary: full.summaryIncluded,
          });
          const decisions = await paged.decisionsOf(served);
          expect(
            decisions.map((d) => [d.index, d.decision, d.reason]),
            label,
          ).toEqual(full.decisions.map((d) => [d.index, d.decision, d.reason]));
        }
      }
    }
    // Pages of at most 8 over sessions of up to 152 messages: the paging really was exercised.
    expect(pagedStatements).toBeGreaterThan(8);
  });

  it('reads a known session, its compaction and its new messages in one statement, and misses nothing appended or compacted since', async () => {
    const { prisma, sql, queries } = app.runtime.db;
    const service = new AssemblyService(prisma, sql);
    const id = await conversation(40);
    const session = await prisma.session.findUniqueOrThrow({ where: { id: rawId(id) } });
    const request = { sessionId: session.id, maxTokens: 60, format: 'OPENAI_CHAT' as const };
    const fresh = () => new AssemblyService(prisma, sql).assemble(session.workspaceId, request);
    const first = await service.assemble(session.workspaceId, request);
    expect(first.truncated).toBe(true);

    // Known now, with its window's rows and parts kept: one statement, nothing else.
    queries.reset();
    const again = await service.assemble(session.workspaceId, request);
    expect(queries.count).toBe(1);
    expect(again.contextHash).toBe(first.contextHash);

    // Messages appended since: read with the session (their parts too), and assembled; the new
    // payload's prefix is stored for the next assembly to compare with.
    await gqlOk(app, AppendMessages, {
      input: {
        sessionId: id,
        messages: [
          { role: 'ASSISTANT', text: 'late answer' },
          { role: 'USER', text: 'late question' },
        ],
      },
    });
    queries.reset();
    const served = await service.assemble(session.workspaceId, request);
    expect(queries.count).toBe(3);
    expect(queries.statements[2]).toMatch(/^INSERT INTO "AssemblyPrefix"/);
    expect(served.messages.at(-1)).toMatchObject({ sourceIndex: 41 });
    expect(served.contextHash).toBe((await fresh()).contextHash);

    // A compaction made after the session became known applies at once.
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 38, summary: 'Most of it.' } });
    const compacted = await service.assemble(session.workspaceId, { ...request, maxTokens: 10_000 });
    expect(compacted.summaryIncluded).toBe(true);
    expect(compacted.messages.filter((m) => m.kind === 'message').map((m) => m.sourceIndex)).toEqual([38, 39, 40, 41]);
  });

  it("compares a fork without recorded contexts with its parent's latest for hasConnectorSwap", async () => {
    const parent = await conversation(4, { model: 'gpt-4o' });
    const turn = await startTurn(parent, 1);
    await assemble(parent, { turnId: turn });
    const same = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 2 } })).forkSession.session.id;
    expect(await assemble(same)).toMatchObject({ isFork: true, isFirstTurn: true, hasConnectorSwap: false });
    const swapped = (await gqlOk(app, ForkSession, { input: { sessionId: parent, messageIndex: 2 } })).forkSession.session.id;
    await gqlOk(app, UpdateSession, { input: { sessionId: swapped, settings: { model: 'claude-sonnet' } } });
    const forkTurn = await startTurn(swapped, 1);
    expect(await assemble(swapped, { turnId: forkTurn })).toMatchObject({ isFirstTurn: true, hasConnectorSwap: true });
    // Its own recorded context is what the next turn compares with.
    const next = await startTurn(swapped, 2);
    expect(await assemble(swapped, { turnId: next })).toMatchObject({ isFirstTurn: false, hasConnectorSwap: false });
  });

  it('assembles a streamed message with its final content once it is finished', async () => {
    const id = await conversation(2);
    const appended = await gqlOk(app, AppendMessages, {
      input: {
        sessionId: id,
        messages: [
          { role: 'USER', text: 'go on' },
          { role: 'ASSISTANT', text: 'Par', generating: true },
        ],
      },
    });
    const streaming = appended.appendMessages.messages[1].id;
    const during = await assemble(id, { maxTokens: 10_000 });
    expect(during.decisions.at(-1)).toMatchObject({ decision: 'DROPPED_GENERATING' });
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming, appendText: 'is is lovely.', generating: false } });
    const after = await assemble(id, { maxTokens: 10_000 });
    expect(after.messages.at(-1)?.text).toBe('Paris is lovely.');
  });

  it('forgets what the caches keep of every session deleteSession removes, forks included', async () => {
    const { caches } = app.runtime;
    const root = await conversation(6);
    const fork = (await gqlOk(app, ForkSession, { input: { sessionId: root, messageIndex: 4 } })).forkSession.session.id;
    await gqlOk(app, AppendMessages, { input: { sessionId: fork, messages: [{ role: 'USER', text: 'own' }] } });
    for (const id of [root, fork]) await assemble(id, { maxTokens: 10_000 });
    const kept = (id: string) => ({
      hint: caches.hints.get(rawId(id)) !== undefined,
      rows: caches.rows.range(rawId(id)) !== null,
    });
    expect([kept(root), kept(fork)]).toEqual([
      { hint: true, rows: true },
      { hint: true, rows: true },
    ]);
    const partsBefore = caches.parts.chars;
    await gqlOk(app, DeleteSession, { input: { sessionId: root, cascade: true } });
    expect([kept(root), kept(fork)]).toEqual([
      { hint: false, rows: false },
      { hint: false, rows: false },
    ]);
    // The parts of the 7 messages the two sessions owned are gone too.
    expect(caches.parts.chars).toBeLessThan(partsBefore);
  });
});
