/** The providers' documented request rules (formats.ts, "PROVIDER RULES"): a test per rule. */
import { describe, expect, it } from 'vitest';
import {
  type AnthropicBlock,
  type AnthropicMessagesPayload,
  type AssembleContextOptions,
  type AssembledContext,
  LEADING_USER_TEXT,
  type OpenAiChatPayload,
  runAssembly,
} from '../../../src/domain/assembly/index.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { countTokens } from '../../../src/domain/tokens.js';
import { anthropicViolations, openAiChatViolations as openAiViolations, payloadViolations } from '../../helpers/provider-payloads.js';
import { assistant, call, calls, generateSession, makeInput, msg, result, results, text, user } from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions> = {}) => runAssembly(makeInput(messages, options));
const anthropic = (r: AssembledContext) => r.payload as AnthropicMessagesPayload & Record<string, unknown>;
const openAi = (r: AssembledContext) => r.payload as OpenAiChatPayload & Record<string, unknown>;
const reasonOf = (r: AssembledContext, index: number) => r.decisions.find((d) => d.index === index)!.reason;
const FORMATS = ['OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'] as const;

describe('ANTHROPIC_MESSAGES: first message user, never empty', () => {
  it('an empty or whitespace-only user message is not the user turn: the placeholder goes first', () => {
    for (const blank of ['', '  \n']) {
      const r = assemble([user(0, blank), assistant(1, 'b'), user(2, 'c')], { format: 'ANTHROPIC_MESSAGES' });
      expect(anthropicViolations(anthropic(r))).toEqual([]);
      expect(anthropic(r).messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: LEADING_USER_TEXT }] });
      expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, 3));
    }
  });

  it('a session of one blank user message still sends one user turn', () => {
    const r = assemble([user(0, ' ')], { format: 'ANTHROPIC_MESSAGES' });
    expect(anthropic(r).messages.length).toBeGreaterThan(0);
    expect(anthropicViolations(anthropic(r))).toEqual([]);
  });
});

describe('ANTHROPIC_MESSAGES: no whitespace-only text blocks', () => {
  it('leaves whitespace-only text parts out and says so in the decision', () => {
    const messages = [user(0, 'q'), msg(1, 'ASSISTANT', [text(' \n\t'), call('c1')]), results(2, ['c1']), user(3, 'ok')];
    const r = assemble(messages, { format: 'ANTHROPIC_MESSAGES' });
    expect(anthropicViolations(anthropic(r))).toEqual([]);
    expect((anthropic(r).messages[1].content as AnthropicBlock[]).map((b) => b.type)).toEqual(['tool_use']);
    expect(reasonOf(r, 1)).toContain('whitespace-only text part is left out');
    // OpenAI accepts whitespace: nothing is changed or noted there.
    expect(reasonOf(assemble(messages, { format: 'OPENAI_CHAT' }), 1)).toBe('Kept.');
  });
});

describe('ANTHROPIC_MESSAGES: final assistant content without trailing whitespace', () => {
  it('trims the last text block of a final assistant message and says so', () => {
    const r = assemble([user(0, 'q'), assistant(1, 'Sure, here it is:  \n')], { format: 'ANTHROPIC_MESSAGES' });
    expect(anthropicViolations(anthropic(r))).toEqual([]);
    expect(anthropic(r).messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Sure, here it is:' }] });
    expect(reasonOf(r, 1)).toContain('trailing whitespace is trimmed');
    // Not the final message: sent as it is.
    const mid = assemble([user(0, 'q'), assistant(1, 'a  '), user(2, 'r')], { format: 'ANTHROPIC_MESSAGES' });
    expect(anthropic(mid).messages[1].content).toEqual([{ type: 'text', text: 'a  ' }]);
    expect(reasonOf(mid, 1)).toBe('Kept.');
  });
});

describe('tool call ids unique in the payload', () => {
  const messages = [
    user(0, 'q'),
    calls(1, ['c1']),
    results(2, ['c1']),
    calls(3, ['c1', 'c1_2']),
    results(4, ['c1', 'c1_2']),
    user(5, 'ok'),
  ];

  it('a call id reused in a later round gets the first suffix free at that point, in its call and its results', () => {
    for (const format of ['ANTHROPIC_MESSAGES', 'OPENAI_CHAT'] as const) {
      const r = assemble(messages, { format, keepToolCallRounds: 10 });
      const violations = format === 'ANTHROPIC_MESSAGES' ? anthropicViolations(anthropic(r)) : openAiViolations(openAi(r));
      expect(violations).toEqual([]);
      const parts = r.messages.flatMap((m) => m.parts);
      expect(parts.flatMap((p) => (p.type === 'toolCall' ? [p.callId] : []))).toEqual(['c1', 'c1_2', 'c1_2_2']);
      expect(parts.flatMap((p) => (p.type === 'toolResult' ? [p.callId] : []))).toEqual(['c1', 'c1_2', 'c1_2_2']);
      expect(reasonOf(r, 3)).toContain('"c1" sent as "c1_2" (already used by an earlier call');
    }
    const r = assemble(messages, { format: 'OPENAI_CHAT', keepToolCallRounds: 10 });
    const tool = openAi(r).messages.filter((m) => m.role === 'tool') as Array<{ tool_call_id: string }>;
    expect(tool.map((m) => m.tool_call_id)).toEqual(['c1', 'c1_2', 'c1_2_2']);
  });

  it('GENERIC sends the stored ids', () => {
    const r = assemble(messages, { keepToolCallRounds: 10 });
    expect(r.messages.flatMap((m) => m.parts).flatMap((p) => (p.type === 'toolCall' ? [p.callId] : []))).toEqual(['c1', 'c1', 'c1_2']);
  });
});

describe('tool call ids and tool names stored as sent, mapped per format', () => {
  const messages = [
    user(0, 'q'),
    msg(1, 'ASSISTANT', [call('functions.get_weather:0', 'weather.lookup'), call('call.1;x', 'x'.repeat(70))]),
    msg(2, 'TOOL', [result('call.1;x'), result('functions.get_weather:0')]),
    user(3, 'ok'),
  ];

  it('every format stays within its provider rules, pairs intact, the same payload each time, the mapping stated and listed', () => {
    for (const format of FORMATS) {
      const r = assemble(messages, { format });
      expect(payloadViolations(format, r.payload), format).toEqual([]);
      expect(assemble(messages, { format }).payload).toEqual(r.payload);
      expect(assemble(messages, { format }).contextHash).toBe(r.contextHash);
      const sent = r.messages.flatMap((m) => m.parts);
      const ids = sent.flatMap((p) => (p.type === 'toolCall' ? [p.callId] : []));
      expect(new Set(ids).size).toBe(2);
      expect(sent.flatMap((p) => (p.type === 'toolResult' ? [p.callId] : []))).toEqual([ids[1], ids[0]]);
      expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, format === 'GEMINI' ? 0 : 3));
      const names = r.toolMappings!.filter((m) => m.kind === 'TOOL_NAME');
      if (format === 'GEMINI') {
        // Dots are Gemini-valid and ids are not sent: only the 70-character name is mapped.
        expect(names.map((m) => m.original)).toEqual(['x'.repeat(70)]);
        expect(r.toolMappings!.some((m) => m.kind === 'CALL_ID')).toBe(false);
      } else {
        expect(names).toContainEqual({ kind: 'TOOL_NAME', original: 'weather.lookup', sent: 'weather_lookup' });
        expect(reasonOf(r, 1)).toContain('tool name "weather.lookup" sent as "weather_lookup"');
        expect(r.toolMappings).toContainEqual({ kind: 'CALL_ID', original: 'functions.get_weather:0', sent: ids[0] });
        expect(reasonOf(r, 1)).toContain(`tool call id "functions.get_weather:0" sent as "${ids[0]}"`);
        expect(reasonOf(r, 2)).toContain(`its result for tool call id "functions.get_weather:0" sent as "${ids[0]}"`);
      }
    }
  });

  it('the name counted is the name sent, so the budget holds it', () => {
    for (const format of ['OPENAI_CHAT', 'OPENAI_RESPONSES'] as const) {
      const r = assemble(messages, { format });
      const sentCalls = r.messages[1].parts.flatMap((p) => (p.type === 'toolCall' ? [p] : []));
      expect(sentCalls[0].name).toBe('weather_lookup');
      const content = sentCalls.reduce((n, p) => n + countTokens(p.name, 'O200K_BASE') + countTokens(p.argumentsJson!, 'O200K_BASE'), 0);
      expect(r.messages[1].tokenCount).toBe(4 + content + 3 * 2);
      // A budget of exactly the total fits; one less does not keep everything.
      expect(assemble(messages, { format, maxTokens: r.tokenCount }).droppedMessageCount).toBe(0);
      expect(assemble(messages, { format, maxTokens: r.tokenCount - 1 }).droppedMessageCount).toBeGreaterThan(0);
    }
  });

  it('two names that clean alike, or a cleaned name that another tool has, never share a sent value', () => {
    const clash = [
      user(0, 'q'),
      msg(1, 'ASSISTANT', [call('a', 'weather.lookup'), call('b', 'weather:lookup'), call('c', 'weather_lookup')]),
      results(2, ['a', 'b', 'c']),
      user(3, 'ok'),
    ];
    for (const format of ['OPENAI_CHAT', 'ANTHROPIC_MESSAGES'] as const) {
      const r = assemble(clash, { format });
      expect(payloadViolations(format, r.payload)).toEqual([]);
      const names = r.messages.flatMap((m) => m.parts).flatMap((p) => (p.type === 'toolCall' ? [p.name] : []));
      expect(names[2]).toBe('weather_lookup');
      expect(new Set(names).size).toBe(3);
      // The result does not depend on the order the names come in.
      const swapped = [
        clash[0],
        msg(1, 'ASSISTANT', [call('b', 'weather:lookup'), call('a', 'weather.lookup'), call('c', 'weather_lookup')]),
        ...clash.slice(2),
      ];
      const again = assemble(swapped, { format }).toolMappings!;
      expect([...again].sort((x, y) => x.original.localeCompare(y.original))).toEqual(
        [...r.toolMappings!].sort((x, y) => x.original.localeCompare(y.original)),
      );
    }
  });

  it('Chat Completions ids longer than 40 characters are mapped, other formats keep them', () => {
    const long = `call_${'a'.repeat(45)}`;
    const ms = [user(0, 'q'), msg(1, 'ASSISTANT', [call(long, 'f')]), results(2, [long]), user(3, 'ok')];
    const chat = assemble(ms, { format: 'OPENAI_CHAT' });
    expect(openAiViolations(openAi(chat))).toEqual([]);
    expect(chat.toolMappings![0].sent).toHaveLength(40);
    expect(assemble(ms, { format: 'ANTHROPIC_MESSAGES' }).toolMappings).toEqual([]);
  });
});

describe('GEMINI: turns alternate, responses follow their calls in order, by name', () => {
  it('answers each call of a round in call order, in the user turn right after, with the name of its call', () => {
    const ms = [
      user(0, 'q'),
      msg(1, 'ASSISTANT', [text('Checking.'), call('a', 'weather.lookup'), call('b', 'calc.v2')]),
      msg(2, 'TOOL', [result('b', 'four'), result('a', 'sunny', true)]),
      user(3, 'thanks'),
    ];
    const r = assemble(ms, { format: 'GEMINI', system: 'Be brief.' });
    expect(payloadViolations('GEMINI', r.payload)).toEqual([]);
    expect(r.payload).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'q' }] },
        {
          role: 'model',
          parts: [
            { text: 'Checking.' },
            { functionCall: { name: 'weather.lookup', args: { q: 'a' } } },
            { functionCall: { name: 'calc.v2', args: { q: 'b' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'weather.lookup', response: { error: 'sunny' } } },
            { functionResponse: { name: 'calc.v2', response: { output: 'four' } } },
            { text: 'thanks' },
          ],
        },
      ],
    });
    // Content only: no framing, no reply priming.
    const content = ms.reduce((n, m) => n + m.tokens!.O200K_BASE, 0) + 3; // + "Be brief."
    expect(r.tokenCount).toBe(content);
  });

  it('starts with a user turn: the placeholder when the kept conversation starts with the model', () => {
    const r = assemble([assistant(0, 'hello'), user(1, 'hi')], { format: 'GEMINI' });
    expect(payloadViolations('GEMINI', r.payload)).toEqual([]);
    expect((r.payload as { contents: Array<{ parts: unknown[] }> }).contents[0].parts).toEqual([{ text: LEADING_USER_TEXT }]);
  });
});

describe('every payload of generated sessions follows the rules', () => {
  it('at many budgets, in every provider format', () => {
    for (let seed = 1; seed <= 6; seed++) {
      const messages = generateSession(60, seed);
      for (const format of FORMATS) {
        for (const maxTokens of [null, 150, 400, 1200, 5000]) {
          let r: AssembledContext;
          try {
            r = assemble(messages, { format, maxTokens, keepToolCallRounds: seed % 3 });
          } catch {
            continue;
          }
          expect(payloadViolations(format, r.payload)).toEqual([]);
          if (maxTokens !== null) expect(r.tokenCount).toBeLessThanOrEqual(maxTokens);
        }
      }
    }
  });
});
