import { describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/tokens.js';
import { backend, gql, gqlError, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { payloadViolations } from '../helpers/provider-payloads.js';

// Issue 33: transcripts of any model stored as sent, assembled for every provider (ids and names
// mapped where a provider refuses them), retry-safe completions, forks that keep the sub-agent
// work made before their cut, and structured compactions. String documents: shapes read loosely.

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const FORMATS = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'] as const;

const CREATE = `mutation Create($input: CreateSessionInput!) {
  createSession(input: $input) {
    id
    messages { edges { node { index parts { __typename ... on ToolCallPart { callId name } ... on ToolResultPart { callId } } } } }
  }
}`;
const APPEND = `mutation Append($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { index } } }`;
const ASSEMBLE = `mutation Assemble($input: AssembleContextInput!) {
  assembleContext(input: $input) {
    tokenCount contextHash payload summaryIncluded
    messages { kind text tokenCount parts { __typename ... on ToolCallPart { callId name } ... on ToolResultPart { callId } } }
    decisions { index decision reason }
    toolMappings { kind original sent }
  }
}`;
const COMPACT = `mutation Compact($input: CompactSessionInput!) {
  compactSession(input: $input) { id compaction { uptoIndex summary extractedContext session { id } } }
}`;
const SESSION_COMPACTION = `query C($id: ID!) { session(id: $id) { compaction { uptoIndex summary extractedContext session { id } } } }`;
const FORK = `mutation Fork($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }`;
const START = `mutation Start($input: StartTurnInput!) { startTurn(input: $input) { id clientTurnId status } }`;
const COMPLETE = `mutation Complete($input: CompleteAgentInput!) {
  completeAgent(input: $input) { id status completedAt clientTurnId agents { agentId status error } }
}`;
const REPORT = `mutation Report($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;
const TURN = `query T($id: ID!) { node(id: $id) { ... on Turn { id clientTurnId status } } }`;
const TIMELINE = `query Timeline($id: ID!) {
  session(id: $id) {
    usage { inputTokens } ownUsage { inputTokens } inheritedUsage { inputTokens } treeUsage { inputTokens }
    timeline(first: 100) { totalCount edges { node { index depth session { id } message { text } } } }
  }
}`;

interface Assembled {
  tokenCount: number;
  contextHash: string;
  payload: Record<string, unknown>;
  summaryIncluded: boolean;
  messages: Array<{ kind: string; text: string; tokenCount: number; parts: Array<{ __typename: string; callId?: string; name?: string }> }>;
  decisions: Array<{ index: number; decision: string; reason: string }>;
  toolMappings: Array<{ kind: string; original: string; sent: string }>;
}

const assemble = async (sessionId: string, extra: Record<string, unknown> = {}) =>
  (await gqlOk<{ assembleContext: Assembled }, unknown>(app, ASSEMBLE, { input: { sessionId, ...extra } })).assembleContext;

/** A Kimi K2 transcript: call ids `functions.<name>:<n>`, a dotted (MCP-style) tool name. */
const KIMI = [
  { role: 'SYSTEM', text: 'You answer weather questions.' },
  { role: 'USER', text: 'Weather in Paris and Berlin?' },
  {
    role: 'ASSISTANT',
    parts: [
      { text: { text: 'Checking both.' } },
      { toolCall: { callId: 'functions.get_weather:0', name: 'weather.lookup', arguments: { city: 'Paris' } } },
      { toolCall: { callId: 'functions.get_weather:1', name: 'weather.lookup', arguments: { city: 'Berlin' } } },
    ],
  },
  {
    role: 'TOOL',
    parts: [
      { toolResult: { callId: 'functions.get_weather:1', content: 'rain' } },
      { toolResult: { callId: 'functions.get_weather:0', content: 'sunny' } },
    ],
  },
  { role: 'ASSISTANT', text: 'Paris is sunny, Berlin rainy.' },
  { role: 'USER', text: 'And tomorrow?' },
];

describe(`transcripts stored as sent, assembled for every provider (${backend.label})`, () => {
  it('stores Kimi ids and dotted names exactly; each format stays within its provider rules, pairs intact, mapping stated', async () => {
    const created = await gqlOk<{ createSession: { id: string; messages: { edges: Array<{ node: { parts: unknown[] } }> } } }, unknown>(
      app,
      CREATE,
      { input: { title: 'kimi', messages: KIMI } },
    );
    const id = created.createSession.id;
    expect(created.createSession.messages.edges[2].node.parts).toEqual([
      { __typename: 'TextPart' },
      { __typename: 'ToolCallPart', callId: 'functions.get_weather:0', name: 'weather.lookup' },
      { __typename: 'ToolCallPart', callId: 'functions.get_weather:1', name: 'weather.lookup' },
    ]);
    expect(created.createSession.messages.edges[3].node.parts).toEqual([
      { __typename: 'ToolResultPart', callId: 'functions.get_weather:1' },
      { __typename: 'ToolResultPart', callId: 'functions.get_weather:0' },
    ]);

    for (const format of FORMATS) {
      for (const maxTokens of [null, 10_000]) {
        const ctx = await assemble(id, { format, maxTokens });
        expect(payloadViolations(format, ctx.payload), `${format} ${maxTokens}`).toEqual([]);
        const sent = ctx.messages.flatMap((m) => m.parts);
        const calls = sent.filter((p) => p.__typename === 'ToolCallPart').map((p) => p.callId);
        // Pairs intact: the results answer the calls, in the order they were stored.
        expect(sent.filter((p) => p.__typename === 'ToolResultPart').map((p) => p.callId)).toEqual([calls[1], calls[0]]);
        // Deterministic: the same session gives the same payload and hash.
        const again = await assemble(id, { format, maxTokens });
        expect(again.payload).toEqual(ctx.payload);
        expect(again.contextHash).toBe(ctx.contextHash);
        const reason = ctx.decisions.find((d) => d.index === 2)!.reason;
        if (format === 'GENERIC' || format === 'GEMINI') {
          // GENERIC sends what is stored; Gemini accepts dotted names and sends no call ids.
          expect(ctx.toolMappings).toEqual([]);
          expect(reason).toBe('Kept.');
        } else {
          expect(ctx.toolMappings).toContainEqual({ kind: 'TOOL_NAME', original: 'weather.lookup', sent: 'weather_lookup' });
          expect(ctx.toolMappings.filter((m) => m.kind === 'CALL_ID').map((m) => m.original)).toEqual([
            'functions.get_weather:0',
            'functions.get_weather:1',
          ]);
          expect(reason).toContain('tool name "weather.lookup" sent as "weather_lookup"');
          expect(reason).toContain(`tool call id "functions.get_weather:0" sent as "${calls[0]}"`);
          expect(ctx.decisions.find((d) => d.index === 3)!.reason).toContain('its result for tool call id');
        }
      }
    }
    const gemini = (await assemble(id, { format: 'GEMINI' })).payload as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
    expect(gemini.contents[2].parts.slice(0, 2)).toEqual([
      { functionResponse: { name: 'weather.lookup', response: { output: 'sunny' } } },
      { functionResponse: { name: 'weather.lookup', response: { output: 'rain' } } },
    ]);
  });

  it('refuses an empty, over-long or control-character call id or tool name, writing nothing; stores everything else', async () => {
    const id = (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: [KIMI[1]] } })).createSession.id;
    for (const toolCall of [
      { callId: '', name: 'search' },
      { callId: 'c1', name: '  ' },
      { callId: 'c\u00011', name: 'search' },
      { callId: 'c1', name: 'search\n' },
      { callId: 'c1', name: 'x\u009b' },
      { callId: 'c'.repeat(257), name: 'search' },
      { callId: 'c1', name: 'x'.repeat(257) },
    ]) {
      const error = await gqlError(app, APPEND, { input: { sessionId: id, messages: [{ role: 'ASSISTANT', parts: [{ toolCall }] }] } });
      expect(error.code, JSON.stringify(toolCall)).toBe('BAD_USER_INPUT');
    }
    expect(await app.runtime.db.prisma.message.count({ where: { sessionId: rawIdOf(id) } })).toBe(1);
    const odd = ['call 1', 'calc.v2', 'ns/tool:run', '日本語', 'x'.repeat(256), 'a9Bc3dEf1']; // Mistral ids are 9 characters
    await gqlOk(app, APPEND, {
      input: {
        sessionId: id,
        messages: [{ role: 'ASSISTANT', parts: odd.map((v, i) => ({ toolCall: { callId: `${v}#${i}`.slice(-256), name: v } })) }],
      },
    });
    await gqlOk(app, APPEND, {
      input: {
        sessionId: id,
        messages: [
          { role: 'TOOL', parts: odd.map((v, i) => ({ toolResult: { callId: `${v}#${i}`.slice(-256), content: 'ok' } })) },
          KIMI[5],
        ],
      },
    });
    for (const format of FORMATS) {
      const ctx = await assemble(id, { format });
      expect(payloadViolations(format, ctx.payload), format).toEqual([]);
    }
  });
});

describe(`a recorded context keeps its mapping (${backend.label})`, () => {
  it('Turn.context.toolMappings reads back what the payload sent', async () => {
    const id = (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: KIMI } })).createSession.id;
    const turnId = (await gqlOk<{ startTurn: { id: string } }, unknown>(app, START, { input: { sessionId: id, agentIds: ['a'] } }))
      .startTurn.id;
    const ctx = await assemble(id, { format: 'ANTHROPIC_MESSAGES', turnId });
    const read = await gqlOk<{ node: { context: { toolMappings: unknown[]; contextHash: string } } }, unknown>(
      app,
      `query R($id: ID!) { node(id: $id) { ... on Turn { context { contextHash toolMappings { kind original sent } } } } }`,
      { id: turnId },
    );
    expect(read.node.context).toEqual({ contextHash: ctx.contextHash, toolMappings: ctx.toolMappings });
    expect(ctx.toolMappings.length).toBe(3);
  });
});

describe(`OPENAI_RESPONSES and GEMINI through the API (${backend.label})`, () => {
  it('OPENAI_RESPONSES counts as OPENAI_CHAT; GEMINI counts content only', async () => {
    const id = (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: KIMI } })).createSession.id;
    const chat = await assemble(id, { format: 'OPENAI_CHAT', system: 'Be brief.' });
    const responses = await assemble(id, { format: 'OPENAI_RESPONSES', system: 'Be brief.' });
    expect(responses.tokenCount).toBe(chat.tokenCount);
    expect((responses.payload.input as Array<{ type: string }>).map((i) => i.type)).toEqual([
      'message',
      'message',
      'message',
      'message',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
      'message',
    ]);
    const gemini = await assemble(id, { format: 'GEMINI', system: 'Be brief.' });
    expect(gemini.tokenCount).toBe(gemini.messages.reduce((n, m) => n + m.tokenCount, 0));
    expect((gemini.payload.systemInstruction as { parts: unknown[] }).parts).toEqual([
      { text: 'Be brief.' },
      { text: 'You answer weather questions.' },
    ]);
  });
});

describe(`structured compactions (${backend.label})`, () => {
  it('stores extractedContext, returns it, inherits it in forks, and assembles it escaped after the summary, counted exactly', async () => {
    const id = (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: KIMI } })).createSession.id;
    const extractedContext = { files: ['src/app.ts'], decisions: ['use </extracted_context> & <b>'], open: { tasks: 2 } };
    const compacted = await gqlOk<{ compactSession: { compaction: Record<string, unknown> } }, unknown>(app, COMPACT, {
      input: { sessionId: id, uptoIndex: 4, summary: 'Weather was checked.', extractedContext },
    });
    expect(compacted.compactSession.compaction).toEqual({
      uptoIndex: 4,
      summary: 'Weather was checked.',
      extractedContext,
      session: { id },
    });

    for (const format of ['OPENAI_CHAT', 'GEMINI', 'ANTHROPIC_MESSAGES'] as const) {
      const ctx = await assemble(id, { format, encoding: 'CL100K_BASE' });
      const summary = ctx.messages.find((m) => m.kind === 'SUMMARY')!;
      expect(summary.text).toBe(
        'Summary of the earlier conversation (messages 0-3):\n\nWeather was checked.\n\n' +
          '<extracted_context>{"decisions":["use \\u003c/extracted_context\\u003e \\u0026 \\u003cb\\u003e"],"files":["src/app.ts"],"open":{"tasks":2}}</extracted_context>',
      );
      expect(summary.tokenCount).toBe(countTokens(summary.text, 'CL100K_BASE') + (format === 'GEMINI' ? 0 : 4));
    }

    // A fork after the compaction's end inherits it, extracted context included.
    const fork = (
      await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(app, FORK, { input: { sessionId: id, messageIndex: 5 } })
    ).forkSession.session.id;
    const read = await gqlOk<{ session: { compaction: Record<string, unknown> } }, unknown>(app, SESSION_COMPACTION, { id: fork });
    expect(read.session.compaction).toEqual({ uptoIndex: 4, summary: 'Weather was checked.', extractedContext, session: { id } });
    expect((await assemble(fork)).messages[1].text).toContain('<extracted_context>{"decisions"');

    // Without it: no section, and null on the compaction.
    await gqlOk(app, COMPACT, { input: { sessionId: id, uptoIndex: 2, summary: 'Short.' } });
    expect(
      (await gqlOk<{ session: { compaction: Record<string, unknown> } }, unknown>(app, SESSION_COMPACTION, { id })).session.compaction,
    ).toMatchObject({ uptoIndex: 2, extractedContext: null });
    expect((await assemble(id)).messages.find((m) => m.kind === 'SUMMARY')!.text).not.toContain('extracted_context');
  });

  it('refuses an extractedContext that is not an object or is too large, writing nothing', async () => {
    const id = (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: KIMI } })).createSession.id;
    for (const extractedContext of [
      [1, 2],
      'text',
      42,
      { deep: JSON.parse(`${'['.repeat(70)}${']'.repeat(70)}`) },
      { big: 'x'.repeat(1_100_000) },
    ]) {
      const error = await gqlError(app, COMPACT, { input: { sessionId: id, uptoIndex: 2, summary: 's', extractedContext } });
      expect(error.code).toBe('BAD_USER_INPUT');
    }
    expect(await app.runtime.db.prisma.compaction.count({ where: { sessionId: rawIdOf(id) } })).toBe(0);
  });
});

describe(`retry-safe turns (${backend.label})`, () => {
  const eventTypes = async (sessionId: string) =>
    (await app.runtime.db.prisma.sessionEvent.findMany({ where: { sessionId: rawIdOf(sessionId) }, orderBy: { sequence: 'asc' } })).map(
      (e) => e.type,
    );
  const newSession = async () =>
    (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: [KIMI[1]] } })).createSession.id;

  it('a completion repeated after the end returns the turn unchanged with no event; a contradicting one is refused', async () => {
    const sessionId = await newSession();
    const started = await gqlOk<{ startTurn: { id: string; clientTurnId: string } }, unknown>(app, START, {
      input: { sessionId, agentIds: ['a', 'b'], turnId: 'client-key-7' },
    });
    expect(started.startTurn.clientTurnId).toBe('client-key-7');
    const turnId = started.startTurn.id;
    expect((await gqlOk<{ node: unknown }, unknown>(app, TURN, { id: turnId })).node).toEqual({
      id: turnId,
      clientTurnId: 'client-key-7',
      status: 'ACTIVE',
    });

    await gqlOk(app, COMPLETE, { input: { turnId, agentId: 'a', success: true } });
    // Repeated while the turn is still active: a no-op too.
    await gqlOk(app, COMPLETE, { input: { turnId, agentId: 'a', success: true } });
    expect((await gqlError(app, COMPLETE, { input: { turnId, agentId: 'a', success: false } })).code).toBe('BAD_USER_INPUT');
    const ended = (
      await gqlOk<{ completeAgent: Record<string, unknown> }, unknown>(app, COMPLETE, {
        input: { turnId, agentId: 'b', success: false, error: 'x' },
      })
    ).completeAgent;
    expect(ended).toMatchObject({ status: 'FAILED', clientTurnId: 'client-key-7' });
    const before = await eventTypes(sessionId);

    for (const [agentId, success] of [
      ['a', true],
      ['b', false],
    ] as const) {
      const again = (
        await gqlOk<{ completeAgent: Record<string, unknown> }, unknown>(app, COMPLETE, { input: { turnId, agentId, success } })
      ).completeAgent;
      expect(again).toEqual(ended);
    }
    for (const [agentId, success] of [
      ['a', false],
      ['b', true],
    ] as const) {
      const error = await gqlError(app, COMPLETE, { input: { turnId, agentId, success } });
      expect(error.code).toBe('TURN_NOT_ACTIVE');
      expect(error.message).toContain(`agent "${agentId}" is recorded as ${success ? 'FAILED' : 'COMPLETED'}`);
    }
    expect(await eventTypes(sessionId)).toEqual(before);
    // A cancelled turn's agents never completed: a completion after the cancel is refused.
    const next = (await gqlOk<{ startTurn: { id: string } }, unknown>(app, START, { input: { sessionId, agentIds: ['a'] } })).startTurn.id;
    await gqlOk(app, `mutation { cancelTurn(input: { turnId: "${next}" }) { id } }`);
    expect((await gqlError(app, COMPLETE, { input: { turnId: next, agentId: 'a', success: true } })).code).toBe('TURN_NOT_ACTIVE');
  });

  it('concurrent identical completions all return the ended turn, which ends exactly once', async () => {
    for (let round = 0; round < 3; round++) {
      const sessionId = await newSession();
      const turnId = (await gqlOk<{ startTurn: { id: string } }, unknown>(app, START, { input: { sessionId, agentIds: ['a', 'b'] } }))
        .startTurn.id;
      await gqlOk(app, COMPLETE, { input: { turnId, agentId: 'a', success: true } });
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          gql<{ completeAgent: { status: string } }, unknown>(app, COMPLETE, { input: { turnId, agentId: 'b', success: true } }),
        ),
      );
      expect(results.map((r) => r.errors ?? r.data!.completeAgent.status)).toEqual(Array(6).fill('COMPLETED'));
      const types = await eventTypes(sessionId);
      expect(types.filter((t) => t === 'TURN_COMPLETED')).toHaveLength(1);
      expect(types.filter((t) => t === 'TURN_AGENT_COMPLETED')).toHaveLength(2);
    }
  });
});

describe(`forks keep the sub-agent work made before their cut (${backend.label})`, () => {
  it('a fork at the message after a delegation shows all of the parent timeline, shared, with its usage inherited once', async () => {
    const parent = (
      await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { messages: [{ role: 'USER', text: 'plan' }] } })
    ).createSession.id;
    const turnId = (await gqlOk<{ startTurn: { id: string } }, unknown>(app, START, { input: { sessionId: parent, agentIds: ['lead'] } }))
      .startTurn.id;
    const sub = (
      await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, {
        input: { parentTurnId: turnId, agentId: 'researcher', messages: [{ role: 'USER', text: 'research' }] },
      })
    ).createSession.id;
    const subTurn = (
      await gqlOk<{ startTurn: { id: string } }, unknown>(app, START, { input: { sessionId: sub, agentIds: ['researcher'] } })
    ).startTurn.id;
    await gqlOk(app, REPORT, { input: { turnId: subTurn, agentId: 'researcher', inputTokens: 70 } });
    await gqlOk(app, REPORT, { input: { turnId, agentId: 'lead', inputTokens: 5 } });
    await gqlOk(app, APPEND, { input: { sessionId: sub, messages: [{ role: 'ASSISTANT', text: 'found it' }] } });
    await gqlOk(app, APPEND, { input: { sessionId: parent, turnId, messages: [{ role: 'ASSISTANT', text: 'delegated' }] } });
    await gqlOk(app, COMPLETE, { input: { turnId, agentId: 'lead', success: true } });
    await gqlOk(app, APPEND, { input: { sessionId: parent, messages: [{ role: 'USER', text: 'next' }] } });

    type TimelineData = {
      session: {
        usage: { inputTokens: number };
        ownUsage: { inputTokens: number };
        inheritedUsage: { inputTokens: number };
        treeUsage: { inputTokens: number };
        timeline: {
          totalCount: number;
          edges: Array<{ node: { index: number; depth: number; session: { id: string }; message: { text: string } } }>;
        };
      };
    };
    const parentRead = await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: parent });
    expect(parentRead.session.timeline.edges.map((e) => e.node.message.text)).toEqual([
      'plan',
      'research',
      'found it',
      'delegated',
      'next',
    ]);

    const fork = (
      await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(app, FORK, { input: { sessionId: parent, messageIndex: 2 } })
    ).forkSession.session.id;
    const read = await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: fork });
    const items = read.session.timeline.edges.map((e) => e.node);
    expect(items.map((i) => i.message.text)).toEqual(['plan', 'research', 'found it', 'delegated']);
    expect(read.session.timeline.totalCount).toBe(4);
    expect(items.map((i) => [i.depth, i.session.id])).toEqual([
      [0, fork],
      [1, sub],
      [1, sub],
      [0, fork],
    ]);
    // Shared, not copied: no new session, and what the sub-agent writes later shows in both.
    expect(await app.runtime.db.prisma.session.count({ where: { parentTurnId: rawIdOf(turnId) } })).toBe(1);
    // Usage: inherited, counted once in the tree, never in the fork's own.
    expect(read.session).toMatchObject({
      usage: { inputTokens: 0 },
      ownUsage: { inputTokens: 0 },
      inheritedUsage: { inputTokens: 70 },
      treeUsage: { inputTokens: 75 },
    });
    expect(parentRead.session).toMatchObject({
      usage: { inputTokens: 75 },
      inheritedUsage: { inputTokens: 0 },
      treeUsage: { inputTokens: 75 },
    });
    // Inside the inherited sub-session: fork that sub-session instead.
    expect((await gqlError(app, FORK, { input: { sessionId: fork, timelineIndex: 1 } })).code).toBe('FORK_POINT_IN_SUB_SESSION');

    // A fork of the fork inherits it through both ancestors' lineage; a fork before the delegation does not.
    await gqlOk(app, APPEND, {
      input: {
        sessionId: fork,
        messages: [
          { role: 'USER', text: 'fork q' },
          { role: 'ASSISTANT', text: 'fork a' },
        ],
      },
    });
    const grand = (
      await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(app, FORK, { input: { sessionId: fork, messageIndex: 2 } })
    ).forkSession.session.id;
    expect(
      (await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: grand })).session.timeline.edges.map((e) => e.node.message.text),
    ).toEqual(['plan', 'research', 'found it', 'delegated']);
    const before = (
      await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(app, FORK, { input: { sessionId: parent, messageIndex: 0 } })
    ).forkSession.session.id;
    const empty = await gqlOk<TimelineData, unknown>(app, TIMELINE, { id: before });
    expect(empty.session.timeline.totalCount).toBe(0);
    expect(empty.session.inheritedUsage.inputTokens).toBe(0);
  });
});
