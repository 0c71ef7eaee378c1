import { describe, expect, it } from 'vitest';
import {
  PREFIX_HASH_BYTES,
  REPLY_PRIMING_TOKENS,
  runAssembly,
  samePrefix,
  type AssembleContextOptions,
  type AssembledContext,
} from '../../../src/domain/assembly/index.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { assistant, calls, makeInput, results, system, user } from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions>, previous?: AssembledContext) =>
  runAssembly({ ...makeInput(messages, options), previousPrefix: previous?.payloadPrefix ?? null });

const history: DomainMessage[] = [
  user(0, 'What is in the report?'),
  assistant(1, 'Revenue grew in every region.'),
  user(2, 'Which region grew most?'),
  assistant(3, 'The north, after the new distribution centre opened.'),
  user(4, 'Why?'),
];

describe('reusedPrefixTokens', () => {
  for (const format of ['ANTHROPIC_MESSAGES', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'GEMINI', 'GENERIC'] as const) {
    it(`${format}: 0 for the first assembly, all of it when nothing changed, the previous payload when messages were appended`, () => {
      const options = { format, system: 'You are terse.' };
      const first = assemble(history.slice(0, 3), options);
      expect(first.reusedPrefixTokens).toBe(0);
      expect(first.payloadPrefix!.hashes.length).toBe(first.messages.length * PREFIX_HASH_BYTES);
      const again = assemble(history.slice(0, 3), options, first);
      const priming = format === 'GEMINI' ? 0 : REPLY_PRIMING_TOKENS;
      expect(again.reusedPrefixTokens).toBe(again.tokenCount - priming);
      expect(samePrefix(again.payloadPrefix!, first.payloadPrefix!)).toBe(true);
      const next = assemble(history, options, again);
      expect(next.reusedPrefixTokens).toBe(first.tokenCount - priming);
      expect(samePrefix(next.payloadPrefix!, again.payloadPrefix!)).toBe(false);
    });
  }

  it('stops at the first message that differs: a new system prompt reuses nothing, a turn context only what comes before it', () => {
    const first = assemble(history.slice(0, 3), { format: 'ANTHROPIC_MESSAGES', system: 'A' });
    expect(assemble(history, { format: 'ANTHROPIC_MESSAGES', system: 'B' }, first).reusedPrefixTokens).toBe(0);
    const withContext = assemble(history.slice(0, 3), { format: 'OPENAI_CHAT', turnContext: { time: '10:00' } });
    const later = assemble(history, { format: 'OPENAI_CHAT', turnContext: { time: '10:01' } }, withContext);
    // The turn context stood before message #2 and now stands before #4: messages #0 and #1 are reused.
    expect(later.reusedPrefixTokens).toBe(later.messages[0].tokenCount + later.messages[1].tokenCount);
  });

  it('ANTHROPIC_MESSAGES and GEMINI read the system blocks first: a SYSTEM message appended changes the prefix from there', () => {
    const first = assemble(history.slice(0, 3), { format: 'ANTHROPIC_MESSAGES', system: 'A' });
    const withSystem = [...history.slice(0, 3), system(3, 'Answer in French from now on.'), user(4, 'Pourquoi ?')];
    const r = assemble(withSystem, { format: 'ANTHROPIC_MESSAGES', system: 'A' }, first);
    expect(r.reusedPrefixTokens).toBe(r.messages[0].tokenCount);
    const chat = assemble(history.slice(0, 3), { format: 'OPENAI_CHAT', system: 'A' });
    // OpenAI reads it where it stands: after the messages the previous call sent.
    expect(assemble(withSystem, { format: 'OPENAI_CHAT', system: 'A' }, chat).reusedPrefixTokens).toBe(
      chat.tokenCount - REPLY_PRIMING_TOKENS,
    );
  });

  it('counts the tool definitions first, and a result turned into a stub ends the reused prefix before its message', () => {
    const tools = assemble(history.slice(0, 3), { format: 'ANTHROPIC_MESSAGES', includeAttachmentTool: true });
    expect(tools.payloadPrefix!.tokens[0]).toBe(tools.toolTokenCount);
    const rounds = [user(0, 'go'), calls(1, ['a']), results(2, ['a']), assistant(3, 'ok'), user(4, 'again')];
    const before = assemble(rounds, { format: 'OPENAI_CHAT', keepToolCallRounds: 1 });
    const more = [...rounds, calls(5, ['b']), results(6, ['b']), assistant(7, 'ok'), user(8, 'more')];
    const after = assemble(more, { format: 'OPENAI_CHAT', keepToolCallRounds: 1 }, before);
    // Round a is now older than the one kept verbatim: its result is a stub, so the prefix ends before it.
    expect(after.decisions[2].decision).toBe('ELIDED');
    expect(after.reusedPrefixTokens).toBe(after.messages[0].tokenCount + after.messages[1].tokenCount);
  });
});
