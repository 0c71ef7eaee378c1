import { describe, expect, it } from 'vitest';
import { runAssembly } from '../../../src/domain/assembly/index.js';
import { DomainError } from '../../../src/domain/errors.js';
import { textCaps } from '../../../src/domain/limits.js';
import { draftMessage, type MessageInputData } from '../../../src/domain/parts.js';
import { readProviderPayload } from '../../../src/domain/provider-messages/index.js';
import { countTokens } from '../../../src/domain/tokens.js';
import type { StoredPart } from '../../../src/domain/types.js';
import { makeInput, msg, text, user } from './helpers.js';

const thinking = (t: string, signature = 'c2ln'): StoredPart => ({
  type: 'reasoning',
  text: t,
  redacted: false,
  providerMetadata: { anthropic: { signature } },
});

describe('reasoning parts in the budget', () => {
  const messages = [
    user(0, 'What is 2 + 2?'),
    msg(1, 'ASSISTANT', [thinking('The user asks for a sum. Two plus two is four, which I can say at once.'), text('4')]),
    user(2, 'And 3 + 3?'),
  ];

  it('counts thinking where it is sent (Anthropic) and nowhere else (Chat Completions)', () => {
    const encoding = 'O200K_BASE';
    const thinkingTokens = countTokens('The user asks for a sum. Two plus two is four, which I can say at once.', encoding);
    const withThinking = runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES', encoding }));
    const withoutThinking = runAssembly(
      makeInput(
        messages.map((m) => ({ ...m, parts: m.parts.filter((p) => p.type !== 'reasoning') })),
        { format: 'ANTHROPIC_MESSAGES', encoding },
      ),
    );
    expect(withThinking.tokenCount - withoutThinking.tokenCount).toBe(thinkingTokens);
    const chat = runAssembly(makeInput(messages, { format: 'OPENAI_CHAT', encoding }));
    const chatWithout = runAssembly(
      makeInput(
        messages.map((m) => ({ ...m, parts: m.parts.filter((p) => p.type !== 'reasoning') })),
        { format: 'OPENAI_CHAT', encoding },
      ),
    );
    expect(chat.tokenCount).toBe(chatWithout.tokenCount);
  });

  it('fits the budget with thinking counted: a budget one token short drops the message that holds it', () => {
    const full = runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES' }));
    const fits = runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES', maxTokens: full.tokenCount }));
    expect(fits.droppedMessageCount).toBe(0);
    const short = runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES', maxTokens: full.tokenCount - 1 }));
    expect(short.droppedMessageCount).toBeGreaterThan(0);
    expect(short.tokenCount).toBeLessThanOrEqual(full.tokenCount - 1);
  });
});

describe('the placeholder user turn is charged only when the payload would not open with a user turn', () => {
  for (const format of ['ANTHROPIC_MESSAGES', 'GEMINI'] as const) {
    it(`${format}: [USER ""] with a turn context fits a budget of exactly its count`, () => {
      const messages = [user(0, '')];
      const options = { format, encoding: 'CHARS_DIV_4' as const, turnContext: { a: 1 } };
      const full = runAssembly(makeInput(messages, options));
      expect(full.messages.some((m) => m.kind === 'system' && m.role === 'USER')).toBe(false);
      expect(runAssembly(makeInput(messages, { ...options, maxTokens: full.tokenCount })).tokenCount).toBe(full.tokenCount);
    });

    it(`${format}: [USER "", ASSISTANT long] with a turn context keeps the assistant message at exactly its count`, () => {
      const messages = [user(0, ''), msg(1, 'ASSISTANT', [text('x'.repeat(200))])];
      const options = { format, encoding: 'CHARS_DIV_4' as const, turnContext: { a: 1 } };
      const full = runAssembly(makeInput(messages, options));
      const fitted = runAssembly(makeInput(messages, { ...options, maxTokens: full.tokenCount }));
      expect(fitted.droppedMessageCount).toBe(0);
      expect(fitted.tokenCount).toBe(full.tokenCount);
    });

    it(`${format}: [USER "", USER question] without a turn context keeps message 0 at exactly its count`, () => {
      const messages = [user(0, ''), user(1, 'last question')];
      const options = { format, encoding: 'CHARS_DIV_4' as const };
      const full = runAssembly(makeInput(messages, options));
      const fitted = runAssembly(makeInput(messages, { ...options, maxTokens: full.tokenCount }));
      expect(fitted.droppedMessageCount).toBe(0);
    });
  }
});

describe('provider readers refuse what they cannot read, naming the JSON path', () => {
  const cases: Array<[Parameters<typeof readProviderPayload>[0], 'messages' | 'response', unknown, string]> = [
    ['ANTHROPIC_MESSAGES', 'messages', [{ role: 'robot', content: 'x' }], 'input.messages[0].role must be "user" or "assistant".'],
    [
      'ANTHROPIC_MESSAGES',
      'messages',
      [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] }],
      'input.messages[0].content[0].signature must be a string.',
    ],
    [
      'OPENAI_CHAT',
      'messages',
      [{ role: 'function', content: 'x' }],
      'input.messages[0].role must be system, developer, user, assistant or tool.',
    ],
    [
      'OPENAI_CHAT',
      'messages',
      [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] }],
      'input.messages[0].tool_calls[0].function.arguments must be a string.',
    ],
    ['OPENAI_CHAT', 'response', { choices: [] }, 'input.response.choices is empty: nothing to store.'],
    [
      'OPENAI_RESPONSES',
      'messages',
      [{ type: 'function_call', name: 'f', arguments: '{}' }],
      'input.messages[0].call_id must be a string.',
    ],
    ['OPENAI_RESPONSES', 'response', { object: 'chat.completion' }, 'input.response.object must be "response" (an OpenAI Response).'],
    [
      'GEMINI',
      'messages',
      [{ role: 'model', parts: [{ functionResponse: { name: 'f' } }] }],
      'input.messages[0].parts[0]: a functionResponse belongs in a "user" turn.',
    ],
    [
      'GEMINI',
      'messages',
      [{ role: 'user', parts: [{ text: 'hi', thought: true }] }],
      'input.messages[0].parts[0]: a thought belongs in a "model" turn.',
    ],
    ['GEMINI', 'response', { candidates: [] }, 'input.response.candidates is empty: nothing to store.'],
    ['GENERIC', 'messages', [], "format GENERIC is no provider's shape: append its messages with appendMessages."],
  ];
  it.each(cases)('%s %s', (format, side, value, message) => {
    let thrown: unknown;
    try {
      readProviderPayload(format, side, value, `input.${side}`);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).code).toBe('BAD_USER_INPUT');
    expect((thrown as DomainError).message).toBe(message);
  });
});

describe('reasoning, provider parts and provider metadata as inputs', () => {
  const caps = textCaps(1024);
  const refusal = (input: MessageInputData) => {
    try {
      draftMessage(input, 'input.messages[0]', caps);
    } catch (error) {
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).code).toBe('BAD_USER_INPUT');
      return (error as DomainError).message;
    }
    return null;
  };

  it('stores them as given', () => {
    const draft = draftMessage(
      {
        role: 'ASSISTANT',
        parts: [
          { reasoning: { text: 'think', providerMetadata: { anthropic: { signature: 's' } } } },
          { providerPart: { provider: 'openai', data: { type: 'web_search_call', id: 'ws_1' }, format: 'OPENAI_RESPONSES' } },
          { text: { text: 'hi', providerMetadata: { openai: { itemId: 'msg_1' }, custom: { x: 1 } } } },
        ],
      },
      'input.messages[0]',
      caps,
    );
    expect(draft.parts).toEqual([
      { type: 'reasoning', text: 'think', redacted: false, providerMetadata: { anthropic: { signature: 's' } } },
      { type: 'providerPart', provider: 'openai', data: { type: 'web_search_call', id: 'ws_1' }, format: 'OPENAI_RESPONSES' },
      { type: 'text', text: 'hi', providerMetadata: { openai: { itemId: 'msg_1' }, custom: { x: 1 } } },
    ]);
  });

  it.each([
    [{ role: 'USER', parts: [{ reasoning: { text: 'x' } }] }, 'input.messages[0]: reasoning belongs in ASSISTANT messages, not USER.'],
    [
      { role: 'ASSISTANT', parts: [{ text: { text: 'x', providerMetadata: [1] } }] },
      'input.messages[0].parts[0].text.providerMetadata must be a JSON object keyed by provider (anthropic, openai, google).',
    ],
    [
      { role: 'ASSISTANT', parts: [{ reasoning: { text: 'x', providerMetadata: { anthropic: { signature: 7 } } } }] },
      'input.messages[0].parts[0].reasoning.providerMetadata.anthropic.signature must be a string.',
    ],
    [
      { role: 'ASSISTANT', parts: [{ text: { text: 'x', providerMetadata: { anthropic: { extra: 'y'.repeat(2000) } } } }] },
      'input.messages[0].parts[0].text.providerMetadata is 2026 characters as JSON, more than 1024, the cap on this server.',
    ],
    [
      { role: 'ASSISTANT', parts: [{ providerPart: { provider: 'mistral', data: {} } }] },
      'input.messages[0].parts[0].providerPart.provider "mistral" is not one of anthropic, openai, google.',
    ],
    [
      { role: 'ASSISTANT', parts: [{ providerPart: { provider: 'google', data: {}, format: 'OPENAI_CHAT' } }] },
      'input.messages[0].parts[0].providerPart.format OPENAI_CHAT is not a format of google (GEMINI).',
    ],
    [
      { role: 'ASSISTANT', parts: [{ providerPart: { provider: 'google', data: 'x' } }] },
      "input.messages[0].parts[0].providerPart.data must be a JSON object (the provider's block as it gave it).",
    ],
  ] as Array<[MessageInputData, string]>)('refuses %#', (input, message) => {
    expect(refusal(input)).toBe(message);
  });
});
