import { describe, expect, it } from 'vitest';
import {
  runAssembly,
  type AnthropicMessagesPayload,
  type AssembleContextOptions,
  type AssembledContext,
} from '../../../src/domain/assembly/index.js';
import { MAX_CACHE_BREAKPOINTS, MIN_CACHEABLE_TOKENS, stableAnchor } from '../../../src/domain/assembly/cache-breakpoints.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { assistant, generateSession, makeInput, user } from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions>) =>
  runAssembly(makeInput(messages, { format: 'ANTHROPIC_MESSAGES', ...options }));

/** The marked blocks of a payload: `system`, or the index of the message and of the block. */
function marks(r: AssembledContext): string[] {
  const payload = r.payload as AnthropicMessagesPayload;
  const out: string[] = [];
  if (Array.isArray(payload.system) && payload.system.some((b) => b.cache_control)) out.push('system');
  payload.messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((b, k) => {
      if ((b as { cache_control?: unknown }).cache_control) out.push(`${i}.${k}`);
    });
  });
  return out;
}

const longSystem = 'Answer precisely and cite the file you read. '.repeat(150);

describe('ANTHROPIC_MESSAGES cache_control breakpoints', () => {
  it('never more than 4, at every budget, strategy and system prompt', () => {
    const session = generateSession(400, 9);
    let seen = 0;
    for (const system of [null, 'Be brief.', longSystem]) {
      for (const cacheStrategy of ['STABLE_PREFIX', 'NEWEST_FIRST'] as const) {
        for (const maxTokens of [null, 3_000, 8_000, 30_000]) {
          for (const end of [120, 251, 400]) {
            const messages = session.slice(0, end);
            const r = assemble(messages, { system, cacheStrategy, maxTokens, keepToolCallRounds: 3 });
            const found = marks(r);
            expect(found.length).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
            seen += found.length;
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(50);
  });

  it('marks the end of the system block (as one text block), the stable prefix and the newest message', () => {
    const r = assemble(generateSession(300, 3), { system: longSystem, maxTokens: 8_000 });
    const payload = r.payload as AnthropicMessagesPayload;
    expect(payload.system).toEqual([{ type: 'text', text: longSystem, cache_control: { type: 'ephemeral' } }]);
    const found = marks(r);
    expect(found).toHaveLength(3);
    const last = payload.messages.length - 1;
    expect(found[2]).toBe(`${last}.${(payload.messages[last].content as unknown[]).length - 1}`);
  });

  it('places none where no model caches: below 1,024 tokens', () => {
    const short = [user(0, 'Hello.'), assistant(1, 'Hi.'), user(2, 'Plan a trip.')];
    const r = assemble(short, { system: 'Be brief.' });
    expect(r.tokenCount).toBeLessThan(MIN_CACHEABLE_TOKENS);
    expect(marks(r)).toEqual([]);
    expect((r.payload as AnthropicMessagesPayload).system).toBe('Be brief.');
  });

  it('marks only the system block when the first message moves at every call (NEWEST_FIRST cut, or maxMessages)', () => {
    const session = generateSession(300, 3);
    const newest = assemble(session, { system: longSystem, maxTokens: 8_000, cacheStrategy: 'NEWEST_FIRST' });
    expect(newest.truncated).toBe(true);
    expect(marks(newest)).toEqual(['system']);
    expect(marks(assemble(session, { system: longSystem, maxMessages: 20 }))).toEqual(['system']);
    // A maxMessages the budget cuts below anyway does not move the start: STABLE_PREFIX's budget does.
    expect(marks(assemble(session, { system: longSystem, maxMessages: 250, maxTokens: 8_000 }))).toHaveLength(3);
    // NEWEST_FIRST that keeps everything: the next call starts with the same messages.
    expect(marks(assemble(session.slice(0, 40), { system: longSystem, cacheStrategy: 'NEWEST_FIRST' }))).toHaveLength(3);
  });

  it('keeps the stable mark on the same message while the first message stays, moving only to a coarser anchor', () => {
    const session = generateSession(500, 4);
    let previous: { first: number; stable: number } | null = null;
    let kept = 0;
    for (let end = 200; end <= 500; end++) {
      const messages = session.slice(0, end);
      if (messages[messages.length - 1].role !== 'USER') continue;
      const r = assemble(messages, { maxTokens: 6_000 });
      const first = r.messages.find((m) => m.sourceIndex !== null)!.sourceIndex!;
      const anchor = stableAnchor(first, end);
      if (anchor === null) continue;
      const stable = [...r.messages].reverse().find((m) => m.sourceIndex !== null && m.sourceIndex < anchor)!.sourceIndex!;
      if (previous && previous.first === first) {
        expect(stable).toBeGreaterThanOrEqual(previous.stable);
        if (stable === previous.stable) kept++;
      }
      previous = { first, stable };
    }
    expect(kept).toBeGreaterThan(10);
    expect(stableAnchor(3, 40)).toBe(32);
    expect(stableAnchor(32, 40)).toBe(36);
    expect(stableAnchor(38, 40)).toBe(39);
    expect(stableAnchor(39, 40)).toBeNull();
  });

  it('depends on the history only: assembled again after itself, the payload and its hash are the same', () => {
    const session = generateSession(300, 3);
    const input = makeInput(session, { format: 'ANTHROPIC_MESSAGES', system: longSystem, maxTokens: 8_000 });
    const a = runAssembly(input);
    const b = runAssembly({ ...input, previousPrefix: a.payloadPrefix });
    expect(b.payload).toEqual(a.payload);
    expect(b.contextHash).toBe(a.contextHash);
    expect(b.reusedPrefixTokens).toBe(b.tokenCount - 3);
  });
});
