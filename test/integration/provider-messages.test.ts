import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/domain/assembly/hash.js';
import { backend, gql, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { makePdf, makePng } from '../helpers/images.js';
import { expectedItems, payloadItems, type ProviderFixture, type ProviderFormat, providerFixtures } from '../helpers/provider-fixtures.js';

const fixture = (file: string): ProviderFixture => providerFixtures().find((f) => f.file === file)!;
const canonical = (value: unknown) => JSON.parse(canonicalJson(value));

const Create = 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id } }';
const AppendProvider = `mutation ($input: AppendProviderMessagesInput!) {
  appendProviderMessages(input: $input) { session { messageCount } messages { role parts { __typename } } }
}`;
const Assemble = `mutation ($input: AssembleContextInput!) {
  assembleContext(input: $input) { payload decisions { index reason } }
}`;
const Count = 'query ($id: ID!) { node(id: $id) { ... on Session { messageCount } } }';

interface Assembled {
  assembleContext: { payload: Record<string, unknown>; decisions: { index: number; reason: string }[] };
}

describe(`every recorded payload, appended over HTTP, assembles back in its own format (${backend.label})`, () => {
  let app: TestApp;
  useTestApp((created) => {
    app = created;
  });
  const AppendTool = 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }';
  const CallIds = `query ($id: ID!) { node(id: $id) { ... on Session { messages(last: 50) { edges { node { parts { ... on ToolCallPart { callId } } } } } } } }`;

  it.each(providerFixtures().map((f) => [f.file, f] as const))('%s', async (_, f) => {
    const opening = f.kind === 'response' ? [{ role: 'USER', text: 'Hello.' }] : [];
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, { input: { messages: opening } });
    const sessionId = createSession.id;
    const side = f.kind === 'request' ? 'messages' : 'response';
    await gqlOk(app, AppendProvider, { input: { sessionId, format: f.format, [side]: f.body } });
    if (f.kind === 'response') {
      // A response's calls are answered (assembly never sends a call without its result).
      const read = await gqlOk<{ node: { messages: { edges: { node: { parts: { callId?: string }[] } }[] } } }, unknown>(app, CallIds, {
        id: sessionId,
      });
      const callIds = read.node.messages.edges.flatMap((e) => e.node.parts.flatMap((p) => (p.callId ? [p.callId] : [])));
      if (callIds.length > 0) {
        const parts = callIds.map((callId) => ({ toolResult: { callId, content: 'ok' } }));
        await gqlOk(app, AppendTool, { input: { sessionId, messages: [{ role: 'TOOL', parts }] } });
      }
    }
    const context = await gqlOk<Assembled, unknown>(app, Assemble, { input: { sessionId, format: f.format, keepToolCallRounds: 1000 } });
    const items = payloadItems(f.format, context.assembleContext.payload);
    const expected = expectedItems(f);
    const sent = f.kind === 'response' ? items.slice(1, 1 + expected.length) : items;
    expect(canonical(sent)).toEqual(canonical(expected));
  });
});

describe(`appendProviderMessages, tried as a client would (${backend.label})`, () => {
  let app: TestApp;
  useTestApp((created) => {
    app = created;
  });

  async function stored(file: string) {
    const f = fixture(file);
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, { input: {} });
    const sessionId = createSession.id;
    await gqlOk(app, AppendProvider, { input: { sessionId, format: f.format, messages: f.body } });
    return { f, sessionId };
  }

  const assemble = (sessionId: string, format: ProviderFormat) =>
    gqlOk<Assembled, unknown>(app, Assemble, { input: { sessionId, format, keepToolCallRounds: 100 } }).then((r) => r.assembleContext);

  it('an Anthropic thinking + tool_use + tool_result transcript assembles back identical, signatures included', async () => {
    const { f, sessionId } = await stored('anthropic/thinking-tool-result-request.json');
    const context = await assemble(sessionId, 'ANTHROPIC_MESSAGES');
    expect(canonical(payloadItems('ANTHROPIC_MESSAGES', context.payload))).toEqual(canonical(expectedItems(f)));
    const assistant = (context.payload.messages as { role: string; content: { type: string; signature?: string }[] }[]).find(
      (m) => m.role === 'assistant',
    )!;
    expect(assistant.content[0].type).toBe('thinking');
    expect(assistant.content[0].signature!.length).toBeGreaterThan(100);
  });

  it('the same transcript as OPENAI_CHAT carries no reasoning and says so', async () => {
    const { sessionId } = await stored('anthropic/thinking-tool-result-request.json');
    const context = await assemble(sessionId, 'OPENAI_CHAT');
    const text = JSON.stringify(context.payload);
    expect(text).not.toContain('signature');
    expect(text).not.toContain('thinking');
    expect(context.decisions.some((d) => d.reason.includes('reasoning part is left out (Chat Completions takes no reasoning back)'))).toBe(
      true,
    );
  });

  it('a Responses reasoning item precedes its function_call, with its id and encrypted content', async () => {
    const { f, sessionId } = await stored('openai-responses/reasoning-function-call-output-request.json');
    const context = await assemble(sessionId, 'OPENAI_RESPONSES');
    const items = payloadItems('OPENAI_RESPONSES', context.payload) as { type?: string; id?: string; encrypted_content?: string }[];
    expect(canonical(items)).toEqual(canonical(expectedItems(f)));
    const reasoning = items.findIndex((i) => i.type === 'reasoning');
    expect(reasoning).toBeGreaterThanOrEqual(0);
    expect(items[reasoning].id).toMatch(/^rs_/);
    expect(items[reasoning].encrypted_content?.length).toBeGreaterThan(100);
    expect(items[reasoning + 1].type).toBe('function_call');
  });

  it('a Gemini functionCall keeps its thoughtSignature, and a parallel call without one gets none', async () => {
    const { f, sessionId } = await stored('gemini/gemini3-multi-round-tool-loop-request.json');
    const context = await assemble(sessionId, 'GEMINI');
    expect(canonical(payloadItems('GEMINI', context.payload))).toEqual(canonical(expectedItems(f)));
    const calls = (context.payload.contents as { parts: { functionCall?: unknown; thoughtSignature?: string }[] }[]).flatMap((c) =>
      c.parts.filter((p) => p.functionCall),
    );
    expect(calls.some((p) => typeof p.thoughtSignature === 'string')).toBe(true);
    expect(calls.some((p) => p.thoughtSignature === undefined)).toBe(true);
  });

  it("a provider part reaches only its provider's format", async () => {
    const { sessionId } = await stored('anthropic/web-search-replay-request.json');
    const anthropic = await assemble(sessionId, 'ANTHROPIC_MESSAGES');
    expect(JSON.stringify(anthropic.payload)).toContain('"server_tool_use"');
    for (const format of ['OPENAI_CHAT', 'OPENAI_RESPONSES', 'GEMINI'] as const) {
      const other = await assemble(sessionId, format);
      expect(JSON.stringify(other.payload)).not.toContain('server_tool_use');
      expect(other.decisions.some((d) => d.reason.includes('anthropic provider part is left out'))).toBe(true);
    }
  });

  it('a malformed body is refused with its JSON path, and nothing is stored', async () => {
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, {
      input: { messages: [{ role: 'USER', text: 'Hi' }] },
    });
    const sessionId = createSession.id;
    const body = fixture('anthropic/thinking-tool-result-request.json').body as { messages: { content: unknown[] }[] };
    const broken = structuredClone(body);
    (broken.messages[1].content[0] as Record<string, unknown>).signature = 42;
    const refused = await gql(app, AppendProvider, { input: { sessionId, format: 'ANTHROPIC_MESSAGES', messages: broken } });
    expect(refused.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0].message).toContain('input.messages.messages[1].content[0].signature must be a string');
    const both = await gql(app, AppendProvider, { input: { sessionId, format: 'GEMINI', messages: [], response: {} } });
    expect(both.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    const after = await gqlOk<{ node: { messageCount: number } }, unknown>(app, Count, { id: sessionId });
    expect(after.node.messageCount).toBe(1);
  });

  it("images and PDFs are stored as attachments: sent back as the same blocks, and as another format's blocks", async () => {
    const png = makePng(64, 48).toString('base64');
    const pdf = makePdf(2).toString('base64');
    const body = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare the chart with the report.' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf }, title: 'report.pdf' },
          ],
        },
      ],
    };
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, { input: {} });
    const sessionId = createSession.id;
    const appended = await gqlOk<{ appendProviderMessages: { messages: { parts: { __typename: string }[] }[] } }, unknown>(
      app,
      AppendProvider,
      { input: { sessionId, format: 'ANTHROPIC_MESSAGES', messages: body } },
    );
    expect(appended.appendProviderMessages.messages[0].parts.map((p) => p.__typename)).toEqual([
      'TextPart',
      'AttachmentPart',
      'AttachmentPart',
    ]);
    const anthropic = await assemble(sessionId, 'ANTHROPIC_MESSAGES');
    // The same blocks, and the prompt-cache breakpoint assembly adds on the newest message's last block.
    const sent = canonical(anthropic.payload.messages) as { content: Record<string, unknown>[] }[];
    const last = sent.at(-1)!.content.at(-1)!;
    expect(last.cache_control).toEqual({ type: 'ephemeral' });
    delete last.cache_control;
    expect(sent).toEqual(canonical(body.messages));
    const responses = await assemble(sessionId, 'OPENAI_RESPONSES');
    expect(canonical(responses.payload.input)).toEqual(
      canonical([
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Compare the chart with the report.' },
            { type: 'input_image', image_url: `data:image/png;base64,${png}`, detail: 'auto' },
            { type: 'input_file', file_data: `data:application/pdf;base64,${pdf}`, filename: 'report.pdf' },
          ],
        },
      ]),
    );
  });

  it('an image whose bytes are not its declared type refuses the whole append, naming its JSON path', async () => {
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, {
      input: { messages: [{ role: 'USER', text: 'Hi' }] },
    });
    const sessionId = createSession.id;
    const png = makePng(8, 8).toString('base64');
    const messages = [
      { role: 'user', content: 'Here it is.' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/jpeg;base64,${png}` } }] },
    ];
    const refused = await gql(app, AppendProvider, { input: { sessionId, format: 'OPENAI_CHAT', messages } });
    expect(refused.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0].message).toContain(
      'input.messages[1].content[0].image_url.url: the bytes are a PNG image (image/png), not image/jpeg as declared',
    );
    const after = await gqlOk<{ node: { messageCount: number } }, unknown>(app, Count, { id: sessionId });
    expect(after.node.messageCount).toBe(1);
  });

  it('a response appended with a turn reports its usage to the turn, once however often it is retried', async () => {
    const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, {
      input: { messages: [{ role: 'USER', text: 'What is the weather?' }] },
    });
    const sessionId = createSession.id;
    const { startTurn } = await gqlOk<{ startTurn: { id: string } }, unknown>(
      app,
      'mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }',
      { input: { sessionId, agentIds: ['main'] } },
    );
    const response = fixture('anthropic/prompt-cache-read-response.json').body as { usage: Record<string, number> };
    const input = { sessionId, format: 'ANTHROPIC_MESSAGES', response, turnId: startTurn.id, agentId: 'main' };
    await gqlOk(app, AppendProvider, { input });
    const usage = await gqlOk<{ node: { usage: Record<string, number> } }, unknown>(
      app,
      'query ($id: ID!) { node(id: $id) { ... on Turn { usage { inputTokens outputTokens cacheReadTokens } } } }',
      { id: startTurn.id },
    );
    expect(usage.node.usage).toEqual({
      inputTokens: response.usage.input_tokens,
      outputTokens: response.usage.output_tokens,
      cacheReadTokens: response.usage.cache_read_input_tokens,
    });
  });
});
