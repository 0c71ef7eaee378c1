import { readFileSync } from 'node:fs';
import { encodeChat as encodeChatGpt4 } from 'gpt-tokenizer/model/gpt-4';
import { encodeChat as encodeChatGpt4o } from 'gpt-tokenizer/model/gpt-4o';
import { describe, expect, it } from 'vitest';
import {
  runAssembly,
  framingTokens,
  REPLY_PRIMING_TOKENS,
  toAnthropicMessages,
  toOpenAiChat,
  type AnthropicBlock,
  type AnthropicMessagesPayload,
  type AssembledMessage,
  type ContextFormat,
  type OpenAiChatPayload,
  type OpenAiResponsesPayload,
} from '../../../src/domain/assembly/index.js';
import { goldenInput } from './golden-fixture.js';
import { countTokens } from '../../../src/domain/tokens.js';
import type { StoredPart } from '../../../src/domain/types.js';
import { assistant, callJson, calls, generateSession, makeInput, msg, result, results, system, text, user } from './helpers.js';

const encodeChat = { O200K_BASE: encodeChatGpt4o, CL100K_BASE: encodeChatGpt4 } as const;

/** A text-only conversation with multi-byte text, code and JSON, and a long history to cut. */
function textConversation() {
  return [
    user(0, 'Hello! Can you help me with TypeScript generics?'),
    assistant(1, 'Of course. `function id<T>(x: T): T { return x; }` is the simplest generic function.'),
    user(2, '日本語でも説明できますか？ 🙏'),
    assistant(3, 'はい、できます。ジェネリクスは型をパラメータとして受け取ります。🎉'),
    system(4, 'From now on, answer briefly.'),
    user(5, 'And JSON? {"a": [1, 2, {"b": null}], "c": "d\\n"}'),
    assistant(6, 'JSON values map to `unknown` until validated.\n\n```json\n{"ok": true}\n```'),
    user(7, 'Thanks — last question: what is `keyof`?'),
  ];
}

describe('OPENAI_CHAT token count equals gpt-tokenizer encodeChat of the payload', () => {
  for (const encoding of ['O200K_BASE', 'CL100K_BASE'] as const) {
    it(`${encoding}: system prompt, summary, SYSTEM message, turn context, multi-byte text`, () => {
      const r = runAssembly(
        makeInput(
          textConversation(),
          {
            format: 'OPENAI_CHAT',
            encoding,
            system: 'You are a senior TypeScript engineer. Be precise.',
            turnContext: { cwd: '/repo', now: '2025-01-01T00:00:00Z', tags: ['a<b', 'ü'] },
          },
          { compaction: { id: 'c', uptoIndex: 2, summary: 'The user asked for help with generics; an example was given.', tokens: null } },
        ),
      );
      const payload = r.payload as OpenAiChatPayload;
      expect(payload.messages).toHaveLength(9); // system, summary, 6 kept (2..7), turn context
      expect(payload.messages.every((m) => typeof m.content === 'string')).toBe(true);
      const chat = payload.messages.map((m) => ({ role: m.role, content: m.content as string }));
      expect(r.tokenCount).toBe(encodeChat[encoding](chat).length);
      // and per message: the sum of message counts plus the priming is the total
      expect(r.messages.reduce((n, m) => n + m.tokenCount, REPLY_PRIMING_TOKENS)).toBe(r.tokenCount);
    });

    it(`${encoding}: still exact after a budget cut, for every budget`, () => {
      const messages = textConversation();
      const full = runAssembly(makeInput(messages, { format: 'OPENAI_CHAT', encoding })).tokenCount;
      for (let maxTokens = full; maxTokens > 0; maxTokens -= 3) {
        let r: ReturnType<typeof runAssembly>;
        try {
          r = runAssembly(makeInput(messages, { format: 'OPENAI_CHAT', encoding, maxTokens }));
        } catch (error) {
          expect((error as { code?: string }).code).toBe('CONTEXT_BUDGET_TOO_SMALL');
          break;
        }
        const chat = (r.payload as OpenAiChatPayload).messages.map((m) => ({ role: m.role, content: m.content as string }));
        const exact = encodeChat[encoding](chat).length;
        expect(r.tokenCount).toBe(exact);
        expect(exact).toBeLessThanOrEqual(maxTokens);
      }
    });
  }

  it('tool traffic follows the documented rule: content + 4 per payload message + 3 per call + 3 priming', () => {
    const messages = [user(0, 'weather?'), calls(1, ['a', 'b'], 'Looking.'), results(2, ['a', 'b']), assistant(3, 'Done.'), user(4, 'ok')];
    const r = runAssembly(makeInput(messages, { format: 'OPENAI_CHAT' }));
    const payload = r.payload as OpenAiChatPayload;
    expect(payload.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'user']);
    const content = messages.reduce((n, m) => n + m.tokens!.O200K_BASE, 0);
    expect(r.tokenCount).toBe(content + 4 * payload.messages.length + 3 * 2 + 3);
  });
});

describe('OPENAI_RESPONSES counts as OPENAI_CHAT; GEMINI counts content only', () => {
  for (const encoding of ['O200K_BASE', 'CL100K_BASE'] as const) {
    it(`${encoding}: OPENAI_RESPONSES text equals gpt-tokenizer encodeChat of its message items`, () => {
      const r = runAssembly(
        makeInput(
          textConversation(),
          { format: 'OPENAI_RESPONSES', encoding, system: 'You are precise.', turnContext: { cwd: '/repo' } },
          { compaction: { id: 'c', uptoIndex: 2, summary: 'Generics were explained.', tokens: null } },
        ),
      );
      const { input } = r.payload as OpenAiResponsesPayload;
      expect(input.every((item) => item.type === 'message' && typeof item.content === 'string')).toBe(true);
      const chat = input.map((item) => {
        const m = item as Extract<typeof item, { type: 'message' }>;
        return { role: m.role, content: m.content as string };
      });
      expect(r.tokenCount).toBe(encodeChat[encoding](chat).length);
    });
  }

  it('with tool traffic, the OPENAI_RESPONSES total is the OPENAI_CHAT total; the GEMINI total is the content', () => {
    const messages = [user(0, 'weather?'), calls(1, ['a', 'b'], 'Looking.'), results(2, ['a', 'b']), assistant(3, 'Done.'), user(4, 'ok')];
    const count = (format: ContextFormat) => runAssembly(makeInput(messages, { format, system: 'sys' })).tokenCount;
    expect(count('OPENAI_RESPONSES')).toBe(count('OPENAI_CHAT'));
    const content = messages.reduce((n, m) => n + m.tokens!.O200K_BASE, 0) + countTokens('sys', 'O200K_BASE');
    expect(count('GEMINI')).toBe(content);
    for (const format of ['OPENAI_RESPONSES', 'GEMINI'] as const) {
      const golden = runAssembly(goldenInput(format));
      expect(golden.messages.reduce((n, m) => n + m.tokenCount, format === 'GEMINI' ? 0 : REPLY_PRIMING_TOKENS)).toBe(golden.tokenCount);
    }
    expect(runAssembly(goldenInput('OPENAI_RESPONSES')).tokenCount).toBe(runAssembly(goldenInput('OPENAI_CHAT')).tokenCount);
  });

  it('a GEMINI budget is content only: the exact total fits, one token less does not keep everything', () => {
    const messages = textConversation();
    const full = runAssembly(makeInput(messages, { format: 'GEMINI' })).tokenCount;
    expect(runAssembly(makeInput(messages, { format: 'GEMINI', maxTokens: full })).droppedMessageCount).toBe(0);
    expect(runAssembly(makeInput(messages, { format: 'GEMINI', maxTokens: full - 1 })).droppedMessageCount).toBeGreaterThan(0);
  });
});

describe('framing rules', () => {
  it('GENERIC is counted exactly as OPENAI_CHAT, ANTHROPIC_MESSAGES with its own rule', () => {
    const messages = [user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a', 'b']), assistant(3, 'x'), user(4, 'y')];
    const count = (format: ContextFormat) => runAssembly(makeInput(messages, { format, system: 'sys' })).tokenCount;
    expect(count('GENERIC')).toBe(count('OPENAI_CHAT'));
    const content = messages.reduce((n, m) => n + m.tokens!.O200K_BASE, 0) + 1; // + "sys"
    // 6 assembled messages x 4, 2 tool_use x 3, 2 tool_result x 3, priming 3
    expect(count('ANTHROPIC_MESSAGES')).toBe(content + 6 * 4 + 2 * 3 + 2 * 3 + 3);
  });

  it('per-message framing for each shape', () => {
    const parts = (...types: string[]) => types.map((type) => ({ type }));
    expect(framingTokens('OPENAI_CHAT', 'USER', parts('text'))).toBe(4);
    expect(framingTokens('OPENAI_CHAT', 'ASSISTANT', parts('text', 'toolCall', 'toolCall'))).toBe(10);
    expect(framingTokens('OPENAI_CHAT', 'TOOL', parts('toolResult', 'toolResult'))).toBe(8);
    expect(framingTokens('OPENAI_CHAT', 'TOOL', parts('toolResult', 'text'))).toBe(8);
    expect(framingTokens('ANTHROPIC_MESSAGES', 'TOOL', parts('toolResult', 'toolResult'))).toBe(10);
    expect(framingTokens('ANTHROPIC_MESSAGES', 'ASSISTANT', parts('toolCall'))).toBe(7);
  });

  it('CHARS_DIV_4 uses the same structure with chars/4 content', () => {
    const messages = [user(0, 'abcdefgh'), assistant(1, 'abc'), user(2, '日本語のテキスト')];
    const r = runAssembly(makeInput(messages, { format: 'OPENAI_CHAT', encoding: 'CHARS_DIV_4' }));
    expect(r.tokenCount).toBe(2 + 1 + 2 + 3 * 4 + 3);
  });
});

describe('provider shapes', () => {
  const base = (role: AssembledMessage['role'], parts: AssembledMessage['parts']): AssembledMessage => ({
    role,
    kind: 'message',
    parts,
    sourceMessageId: null,
    sourceIndex: null,
    tokenCount: 0,
  });

  it('OPENAI_CHAT: assistant with only calls has content null; tool results one message each', () => {
    const p = toOpenAiChat([
      base('ASSISTANT', [{ type: 'toolCall', callId: 'a', name: 'f', arguments: { x: 1 } }]),
      base('TOOL', [
        { type: 'toolResult', callId: 'a', content: 'r', isError: false },
        { type: 'text', text: 'extra note' },
      ]),
    ]);
    expect(p.messages).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }] },
      { role: 'tool', tool_call_id: 'a', content: 'r' },
      { role: 'user', content: 'extra note' },
    ]);
  });

  it('ANTHROPIC_MESSAGES: merges same-role turns, keeps tool_result first after tool_use, drops empty text', () => {
    const p = toAnthropicMessages([
      base('SYSTEM', [{ type: 'text', text: 'sys' }]),
      base('USER', [{ type: 'text', text: 'q1' }]),
      base('USER', [
        { type: 'text', text: '' },
        { type: 'text', text: 'q2' },
      ]),
      base('ASSISTANT', [{ type: 'text', text: 'thinking' }]),
      base('ASSISTANT', [{ type: 'toolCall', callId: 'a', name: 'f', arguments: 'not an object' }]),
      base('TOOL', [{ type: 'toolResult', callId: 'a', content: 'boom', isError: true }]),
      base('USER', [{ type: 'text', text: 'next' }]),
      base('SYSTEM', [{ type: 'text', text: 'late system note' }]),
    ]);
    expect(p).toEqual<AnthropicMessagesPayload>({
      system: 'sys\n\nlate system note',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'q1' },
            { type: 'text', text: 'q2' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'thinking' },
            { type: 'tool_use', id: 'a', name: 'f', input: { value: 'not an object' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'a', content: 'boom', is_error: true },
            { type: 'text', text: 'next' },
          ],
        },
      ],
    });
  });

  it('ANTHROPIC_MESSAGES: roles alternate and every tool_use is answered in the next message, on a long session', () => {
    const r = runAssembly(makeInput(generateSession(400, 3), { format: 'ANTHROPIC_MESSAGES', maxTokens: 20_000 }));
    const { messages } = r.payload as AnthropicMessagesPayload;
    for (let i = 0; i < messages.length; i++) {
      if (i > 0) expect(messages[i].role).not.toBe(messages[i - 1].role);
      const uses = (messages[i].content as AnthropicBlock[]).flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
      if (uses.length === 0) continue;
      const next = messages[i + 1].content as AnthropicBlock[];
      const leading = next.slice(0, uses.length);
      expect(leading.every((b) => b.type === 'tool_result')).toBe(true);
      expect(leading.map((b) => (b.type === 'tool_result' ? b.tool_use_id : '')).sort()).toEqual([...uses].sort());
    }
  });
});

describe('golden payloads (test/golden)', () => {
  const files: Record<ContextFormat, string> = {
    OPENAI_CHAT: 'context-openai-chat.json',
    OPENAI_RESPONSES: 'context-openai-responses.json',
    ANTHROPIC_MESSAGES: 'context-anthropic-messages.json',
    GEMINI: 'context-gemini.json',
    GENERIC: 'context-generic.json',
  };
  for (const format of Object.keys(files) as ContextFormat[]) {
    it(`${format}: system prompt, summary, text, parallel tool round, attachment, turn context`, () => {
      const golden = JSON.parse(readFileSync(new URL(`../../golden/${files[format]}`, import.meta.url), 'utf8'));
      const r = runAssembly(goldenInput(format));
      expect(r.payload).toEqual(golden);
    });
  }

  it('the golden conversation includes the summary and explains the summarized messages', () => {
    const r = runAssembly(goldenInput('OPENAI_CHAT'));
    expect(r.summaryIncluded).toBe(true);
    expect(r.decisions.map((d) => d.decision)).toEqual(['SUMMARIZED', 'SUMMARIZED', 'KEPT', 'KEPT', 'KEPT', 'KEPT', 'KEPT']);
  });
});

describe('tool-call arguments in OPENAI_CHAT', () => {
  it('sends the stored text byte for byte and counts name and arguments apart, 3 per call', () => {
    const text = '{"b": 1.0, "a": [1e3, "caf\\u00e9"]}';
    const m = msg(1, 'ASSISTANT', [callJson('c1', 'lookup', text)]);
    const r = runAssembly(makeInput([msg(0, 'USER', [{ type: 'text', text: 'q' }]), m, results(2, ['c1'])], { format: 'OPENAI_CHAT' }));
    const sent = (r.payload as OpenAiChatPayload).messages[1];
    expect(sent).toMatchObject({ tool_calls: [{ function: { arguments: text, name: 'lookup' } }] });
    expect(r.messages[1].tokenCount).toBe(4 + countTokens('lookup', 'O200K_BASE') + countTokens(text, 'O200K_BASE') + 3);
  });

  it('a row stored before the text was kept is sent as its value serialized and counted as sent, not as stored', () => {
    const legacy: StoredPart = { type: 'toolCall', callId: 'c1', name: 'lookup', arguments: { units: 'metric', city: 'Paris' } };
    // Its stored count was of another text (the client's key order, joined to the name).
    const m = msg(1, 'ASSISTANT', [legacy], { tokens: { O200K_BASE: 1, CL100K_BASE: 1 } });
    const r = runAssembly(makeInput([msg(0, 'USER', [{ type: 'text', text: 'q' }]), m, results(2, ['c1'])], { format: 'OPENAI_CHAT' }));
    const sentText = '{"units":"metric","city":"Paris"}';
    expect((r.payload as OpenAiChatPayload).messages[1]).toMatchObject({ tool_calls: [{ function: { arguments: sentText } }] });
    expect(r.messages[1].tokenCount).toBe(4 + countTokens('lookup', 'O200K_BASE') + countTokens(sentText, 'O200K_BASE') + 3);
  });
});

describe('mixed parts', () => {
  it('a multi-part user message is an array of text parts in OPENAI_CHAT and counted part by part', () => {
    const m = msg(0, 'USER', [text('part one'), text('part two')]);
    const r = runAssembly(makeInput([m], { format: 'OPENAI_CHAT' }));
    expect((r.payload as OpenAiChatPayload).messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'part one' },
        { type: 'text', text: 'part two' },
      ],
    });
    expect(r.tokenCount).toBe(m.tokens!.O200K_BASE + 4 + 3);
  });

  it('an error tool result keeps is_error in ANTHROPIC_MESSAGES and isError in GENERIC', () => {
    const messages = [user(0, 'q'), calls(1, ['a']), msg(2, 'TOOL', [result('a', 'failed', true)]), user(3, 'q2')];
    const anthropic = runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES' })).payload as AnthropicMessagesPayload;
    expect(anthropic.messages[2].content[0]).toEqual({ type: 'tool_result', tool_use_id: 'a', content: 'failed', is_error: true });
    const generic = runAssembly(makeInput(messages, { format: 'GENERIC' })).payload as { messages: { parts: unknown[] }[] };
    expect(generic.messages[2].parts[0]).toEqual({ type: 'toolResult', callId: 'a', content: 'failed', isError: true });
  });
});
