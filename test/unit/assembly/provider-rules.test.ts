/** The providers' documented request rules (formats.ts, "PROVIDER RULES"): a test per rule. */
import { describe, expect, it } from 'vitest';
import {
  type AnthropicMessagesPayload,
  type AssembleContextOptions,
  type AssembledContext,
  LEADING_USER_TEXT,
  type OpenAiChatPayload,
  runAssembly,
} from '../../../src/domain/assembly/index.js';
import { TOOL_CALL_ID_PATTERN, TOOL_NAME_PATTERN } from '../../../src/domain/assembly/provider-rules.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { assistant, call, calls, generateSession, makeInput, msg, result, results, text, user } from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions> = {}) => runAssembly(makeInput(messages, options));
const anthropic = (r: AssembledContext) => r.payload as AnthropicMessagesPayload;
const openAi = (r: AssembledContext) => r.payload as OpenAiChatPayload;
const reasonOf = (r: AssembledContext, index: number) => r.decisions.find((d) => d.index === index)!.reason;

/** Every documented Anthropic rule this server can break, as sentences (empty = the payload is valid). */
function anthropicViolations(payload: AnthropicMessagesPayload): string[] {
  const out: string[] = [];
  const { messages } = payload;
  if (messages.length === 0) out.push('messages is empty');
  else if (messages[0].role !== 'user') out.push('the first message is not user');
  const ids = new Set<string>();
  messages.forEach((m, i) => {
    if (m.content.length === 0) out.push(`message ${i} has no content`);
    for (const b of m.content) {
      if (b.type === 'text' && !/\S/.test(b.text)) out.push(`message ${i} has a whitespace-only text block`);
      if (b.type === 'tool_use') {
        if (ids.has(b.id)) out.push(`duplicate tool_use id ${b.id}`);
        ids.add(b.id);
        if (!TOOL_CALL_ID_PATTERN.test(b.id)) out.push(`invalid tool_use id ${b.id}`);
        if (!TOOL_NAME_PATTERN.test(b.name)) out.push(`invalid tool name ${b.name}`);
      }
    }
    if (i > 0 && messages[i - 1].role === m.role) out.push(`messages ${i - 1} and ${i} have the same role`);
  });
  const last = messages[messages.length - 1];
  const block = last?.content[last.content.length - 1];
  if (last?.role === 'assistant' && block?.type === 'text' && block.text !== block.text.trimEnd()) {
    out.push('final assistant content ends with whitespace');
  }
  return out;
}

function openAiViolations(payload: OpenAiChatPayload): string[] {
  const out: string[] = [];
  if (payload.messages.length === 0) out.push('messages is empty');
  const ids = new Set<string>();
  for (const m of payload.messages) {
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const c of m.tool_calls) {
      if (ids.has(c.id)) out.push(`duplicate tool call id ${c.id}`);
      ids.add(c.id);
      if (!TOOL_NAME_PATTERN.test(c.function.name)) out.push(`invalid function name ${c.function.name}`);
      if (!TOOL_CALL_ID_PATTERN.test(c.id)) out.push(`invalid tool call id ${c.id}`);
    }
  }
  return out;
}

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
    expect(anthropic(r).messages[1].content.map((b) => b.type)).toEqual(['tool_use']);
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
      expect(reasonOf(r, 3)).toContain('"c1" is sent as "c1_2" (already used by an earlier call');
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

describe('tool call ids and tool names outside the providers patterns (stored before the write-time check)', () => {
  const messages = [
    user(0, 'q'),
    msg(1, 'ASSISTANT', [call('call.1:x', 'files.read'), call('call.1;x', 'x'.repeat(70))]),
    msg(2, 'TOOL', [result('call.1:x'), result('call.1;x')]),
    user(3, 'ok'),
  ];

  it('get deterministic, distinct stand-ins that match the patterns, and the decision says so', () => {
    for (const format of ['ANTHROPIC_MESSAGES', 'OPENAI_CHAT'] as const) {
      const r = assemble(messages, { format });
      const violations = format === 'ANTHROPIC_MESSAGES' ? anthropicViolations(anthropic(r)) : openAiViolations(openAi(r));
      expect(violations).toEqual([]);
      const ids = r.messages.flatMap((m) => m.parts).flatMap((p) => (p.type === 'toolCall' ? [p.callId] : []));
      expect(new Set(ids).size).toBe(2);
      expect(r.messages.flatMap((m) => m.parts).flatMap((p) => (p.type === 'toolResult' ? [p.callId] : []))).toEqual(ids);
      expect(assemble(messages, { format }).payload).toEqual(r.payload);
      expect(reasonOf(r, 1)).toContain('not a valid provider id');
      expect(reasonOf(r, 1)).toContain('not a valid provider tool name');
      expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, 3));
    }
  });
});

describe('every payload of generated sessions follows the rules', () => {
  it('at many budgets, in both provider formats', () => {
    for (let seed = 1; seed <= 6; seed++) {
      const messages = generateSession(60, seed);
      for (const maxTokens of [null, 150, 400, 1200, 5000]) {
        let r: AssembledContext;
        try {
          r = assemble(messages, { format: 'ANTHROPIC_MESSAGES', maxTokens, keepToolCallRounds: seed % 3 });
        } catch {
          continue;
        }
        expect(anthropicViolations(anthropic(r))).toEqual([]);
        expect(openAiViolations(openAi(assemble(messages, { format: 'OPENAI_CHAT' })))).toEqual([]);
      }
    }
  });
});
