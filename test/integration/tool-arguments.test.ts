/**
 * Tool-call arguments are stored and sent as the client gave them, byte for byte, and OPENAI_CHAT
 * counts the text it sends (issue 12, item 1).
 */
import { encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { gql, gqlError, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';

// Untyped documents: the shapes the assertions look at are spelled out where they are read.
// biome-ignore lint/suspicious/noExplicitAny: response bodies of string documents
type Any = any;

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const CREATE = `mutation($input: CreateSessionInput!) { createSession(input: $input) { id } }`;
const PARTS = `query($id: ID!) { node(id: $id) { ... on Session { messages(first: 10) { edges { node {
  id tokenCount parts { __typename ... on ToolCallPart { callId name arguments argumentsJson } } } } } } } }`;
const ASSEMBLE = `mutation($input: AssembleContextInput!) { assembleContext(input: $input) {
  tokenCount payload messages { role sourceIndex tokenCount } } }`;

type ToolCallInput = { callId: string; name: string; arguments?: unknown; argumentsJson?: string };

async function sessionWithCalls(calls: ToolCallInput[]) {
  const { createSession } = await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, {
    input: {
      messages: [
        { role: 'USER', text: 'Weather, please.' },
        { role: 'ASSISTANT', parts: calls.map((toolCall) => ({ toolCall })) },
        { role: 'TOOL', parts: calls.map((c) => ({ toolResult: { callId: c.callId, content: 'ok' } })) },
        { role: 'USER', text: 'Thanks.' },
      ],
    },
  });
  return createSession.id;
}

const sameJson = '{"units": "metric",  "city":"Z\\u00fcrich", "days": 1.0, "limit": 1e3, "nested": [[1, [2.50]], {"b": 1, "a": 2}]}';

describe('tool-call arguments, byte for byte', () => {
  it('keeps argumentsJson and a JSON-text `arguments` exactly, serializes a value once, and sends what it stored', async () => {
    const calls: ToolCallInput[] = [
      { callId: 'c1', name: 'get_weather', argumentsJson: sameJson },
      { callId: 'c2', name: 'get_weather', arguments: sameJson },
      { callId: 'c3', name: 'get_weather', arguments: { units: 'metric', city: 'Zürich', days: 1.0 } },
      { callId: 'c4', name: 'noop' },
      { callId: 'c5', name: 'echo', arguments: 'plain text, not JSON' },
    ];
    const id = await sessionWithCalls(calls);
    const read = await gqlOk<Any, unknown>(app, PARTS, { id });
    const parts = read.node.messages.edges[1].node.parts;
    const texts = [sameJson, sameJson, '{"units":"metric","city":"Zürich","days":1}', '{}', '"plain text, not JSON"'];
    expect(parts.map((p: { argumentsJson: string }) => p.argumentsJson)).toEqual(texts);
    expect(parts[1].arguments).toEqual(JSON.parse(sameJson));
    expect(parts[4].arguments).toBe('plain text, not JSON');

    const r = await gqlOk<Any, unknown>(app, ASSEMBLE, { input: { sessionId: id, format: 'OPENAI_CHAT' } });
    const payload = r.assembleContext.payload.messages;
    const sent = payload[1].tool_calls.map((c: { function: { arguments: string } }) => c.function.arguments);
    expect(sent).toEqual(texts);
    // The count is the payload's: name and arguments apart (gpt-tokenizer's countMessageTokens), 3 per call, 4 per message.
    const assistant = r.assembleContext.messages[1];
    expect(assistant.tokenCount).toBe(
      4 + sent.reduce((n: number, text: string, k: number) => n + countTokens(calls[k].name) + countTokens(text) + 3, 0),
    );
    const textOnly = payload.filter((m: { role: string }) => m.role === 'user');
    expect(r.assembleContext.messages[0].tokenCount + r.assembleContext.messages[r.assembleContext.messages.length - 1].tokenCount).toBe(
      encodeChat(textOnly, 'gpt-4o').length - 3,
    );
    // Anthropic and GENERIC send the value, keys in the client's order.
    const anthropic = await gqlOk<Any, unknown>(app, ASSEMBLE, { input: { sessionId: id, format: 'ANTHROPIC_MESSAGES' } });
    const input = anthropic.assembleContext.payload.messages[1].content[0].input;
    expect(Object.keys(input)).toEqual(['units', 'city', 'days', 'limit', 'nested']);
    expect(input).toEqual(JSON.parse(sameJson));
  });

  it('refuses what cannot be stored or sent, naming the argument, and writes nothing', async () => {
    const cases: Array<[ToolCallInput, RegExp]> = [
      [{ callId: 'c', name: 'f', argumentsJson: '{"a": 1,}' }, /argumentsJson is not valid JSON/],
      [{ callId: 'c', name: 'f', argumentsJson: '' }, /argumentsJson is not valid JSON/],
      [{ callId: 'c', name: 'f', argumentsJson: '{}', arguments: {} }, /not both/],
      [{ callId: 'c', name: 'f', argumentsJson: '{"a": "\\u0000"}' }, /NUL/],
      [{ callId: 'c', name: 'f', argumentsJson: '{"a": "\\ud800"}' }, /unpaired/],
      [{ callId: 'c', name: 'f', argumentsJson: '{"__proto__": {}}' }, /not allowed/],
      [{ callId: 'c', name: 'f', argumentsJson: `${'['.repeat(100)}${']'.repeat(100)}` }, /nested more than/],
      [{ callId: 'c', name: 'f', arguments: '{"a": "\\u0000"}' }, /NUL/],
    ];
    for (const [toolCall, message] of cases) {
      const before = await gql<Any, unknown>(app, `{ sessions(first: 1) { totalCount } }`);
      const error = await gqlError(app, CREATE, {
        input: {
          messages: [
            { role: 'USER', text: 'q' },
            { role: 'ASSISTANT', parts: [{ toolCall }] },
          ],
        },
      });
      expect(error.code, JSON.stringify(toolCall)).toBe('BAD_USER_INPUT');
      expect(error.message).toMatch(message);
      expect(error.message).toContain('toolCall');
      const after = await gql<Any, unknown>(app, `{ sessions(first: 1) { totalCount } }`);
      expect(after.data).toEqual(before.data);
    }
  });
});
