import { describe, expect, it } from 'vitest';
import {
  runAssembly,
  findToolInvariantViolations,
  framingTokens,
  type AssembledContext,
  type AssembleContextOptions,
  LEADING_USER_TEXT,
  type AnthropicBlock,
  type AnthropicMessagesPayload,
  type OpenAiChatPayload,
} from '../../../src/domain/assembly/index.js';
import { countTokens } from '../../../src/domain/tokens.js';
import type { DomainCompaction, DomainMessage } from '../../../src/domain/types.js';
import {
  assistant,
  attachmentPart,
  call,
  calls,
  generateSession,
  makeInput,
  msg,
  result,
  results,
  system,
  text,
  textAttachment,
  user,
} from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions> = {}, extra: Parameters<typeof makeInput>[2] = {}) =>
  runAssembly(makeInput(messages, options, extra));

const keptIds = (r: AssembledContext) => r.messages.flatMap((m) => (m.sourceMessageId ? [m.sourceMessageId] : []));
const decisionOf = (r: AssembledContext, id: string) => r.decisions.find((d) => d.messageId === id)!;
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
};

/** Checks every structural promise of an assembled context. */
function expectWellFormed(r: AssembledContext, input: DomainMessage[]) {
  expect(findToolInvariantViolations(r.messages)).toEqual([]);
  const sources = r.messages.filter((m) => m.kind === 'message');
  if (sources.length > 0) expect(sources[0].role).not.toBe('TOOL');
  // decisions: one per input message, in input order, and consistent with what is in the context
  expect(r.decisions.map((d) => d.messageId)).toEqual(input.map((m) => m.id));
  const kept = new Set(keptIds(r));
  for (const d of r.decisions) {
    expect(kept.has(d.messageId), `${d.messageId} ${d.decision}`).toBe(d.decision === 'KEPT' || d.decision === 'ELIDED');
    expect(d.reason.length).toBeGreaterThan(3);
  }
  expect(r.droppedMessageCount).toBe(r.decisions.filter((d) => d.decision.startsWith('DROPPED_')).length);
  // kept messages stay in index order
  const indexes = sources.map((m) => m.sourceIndex!);
  expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  expect(r.messages.reduce((n, m) => n + m.tokenCount, 3)).toBe(r.tokenCount);
  if (r.maxTokens !== null) expect(r.tokenCount).toBeLessThanOrEqual(r.maxTokens);
}

/** A session with tool rounds of every kind: sequential, parallel in one message, parallel answered separately. */
function toolSession(): DomainMessage[] {
  return [
    user(0, 'Find the bug in the parser.'),
    calls(1, ['c1'], 'Reading the file.'),
    results(2, ['c1'], () => 'export function parse(input: string) {\n  return input.split(",");\n}\n'.repeat(3)),
    calls(3, ['c2', 'c3']),
    results(4, ['c2', 'c3'], (id) => `{"file":"${id}.ts","lines":[1,2,3]}`),
    assistant(5, 'The split ignores quoted commas.'),
    user(6, 'Fix it and run the tests.'),
    calls(7, ['c4', 'c5', 'c6'], 'Editing and testing in parallel.'),
    results(8, ['c4']),
    results(9, ['c5', 'c6'], () => 'PASS 12 tests'),
    assistant(10, 'Fixed; all 12 tests pass.'),
    user(11, 'Great, now explain the change in one sentence.'),
  ];
}

describe('assembleContext: refusals', () => {
  it('a budget of 0 or below is BAD_USER_INPUT', () => {
    expect(codeOf(() => assemble([user(0, 'q')], { maxTokens: 0 }))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => assemble([user(0, 'q')], { maxTokens: -10 }))).toBe('BAD_USER_INPUT');
  });

  it('maxMessages 0 is BAD_USER_INPUT', () => {
    expect(codeOf(() => assemble([user(0, 'q')], { maxMessages: 0 }))).toBe('BAD_USER_INPUT');
  });

  it('a turnContext that is not an object is BAD_USER_INPUT', () => {
    expect(codeOf(() => assemble([user(0, 'q')], { turnContext: ['x'] as never }))).toBe('BAD_USER_INPUT');
  });

  it('a session without a finished user message is BAD_USER_INPUT', () => {
    expect(codeOf(() => assemble([]))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => assemble([assistant(0, 'hello')]))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => assemble([user(0, 'typing…', { generating: true })]))).toBe('BAD_USER_INPUT');
  });

  it('a budget below the system prompt is CONTEXT_BUDGET_TOO_SMALL', () => {
    const systemPrompt = 'You are a careful assistant. '.repeat(20);
    const need = countTokens(systemPrompt, 'O200K_BASE') + 4 + 3;
    expect(codeOf(() => assemble([user(0, 'q')], { system: systemPrompt, maxTokens: need - 1 }))).toBe('CONTEXT_BUDGET_TOO_SMALL');
  });

  it('CONTEXT_BUDGET_TOO_SMALL says exactly how many tokens are needed, and that many works', () => {
    const messages = [user(0, 'old'), assistant(1, 'reply'), user(2, 'The newest question, which is a bit longer than the others.')];
    const options = { format: 'OPENAI_CHAT' as const, system: 'Be brief.', turnContext: { cwd: '/repo' } };
    let message = '';
    try {
      assemble(messages, { ...options, maxTokens: 10 });
    } catch (error) {
      expect((error as { code: string }).code).toBe('CONTEXT_BUDGET_TOO_SMALL');
      message = (error as Error).message;
    }
    const needed = Number(/needs (\d+) tokens/.exec(message)?.[1]);
    expect(message).toMatch(/maxTokens is 10/);
    expect(message).toMatch(/newest user message \(message #2 \(USER\)/);
    expect(message).toMatch(/for the system prompt.*for the turn context/);
    const r = assemble(messages, { ...options, maxTokens: needed });
    expect(r.tokenCount).toBe(needed);
    expect(keptIds(r)).toEqual(['m2']);
    expect(codeOf(() => assemble(messages, { ...options, maxTokens: needed - 1 }))).toBe('CONTEXT_BUDGET_TOO_SMALL');
  });

  it('a single user message bigger than the budget is CONTEXT_BUDGET_TOO_SMALL, not silently cut', () => {
    expect(codeOf(() => assemble([user(0, 'word '.repeat(500))], { maxTokens: 100 }))).toBe('CONTEXT_BUDGET_TOO_SMALL');
  });
});

describe('assembleContext: budgets at the edges', () => {
  const messages = toolSession();
  const full = assemble(messages, { format: 'OPENAI_CHAT', system: 'sys' });

  it('a budget that exactly fits keeps everything', () => {
    const r = assemble(messages, { format: 'OPENAI_CHAT', system: 'sys', maxTokens: full.tokenCount });
    expect(r.tokenCount).toBe(full.tokenCount);
    expect(r.droppedMessageCount).toBe(0);
    expect(r.truncated).toBe(false);
    expectWellFormed(r, messages);
  });

  it('one token below drops the oldest message and says so', () => {
    const r = assemble(messages, { format: 'OPENAI_CHAT', system: 'sys', maxTokens: full.tokenCount - 1 });
    expect(r.truncated).toBe(true);
    expect(r.droppedMessageCount).toBeGreaterThan(0);
    expect(decisionOf(r, 'm0').decision).toBe('DROPPED_BUDGET');
    expect(decisionOf(r, 'm0').reason).toMatch(/maxTokens/);
    expectWellFormed(r, messages);
  });

  it('tool rounds at every cut position: invariant holds, newest user message kept, newest run kept', () => {
    // GENERIC is counted exactly as OPENAI_CHAT (formats.test.ts), so two formats cover the cuts
    for (const format of ['OPENAI_CHAT', 'ANTHROPIC_MESSAGES'] as const) {
      for (const keepToolCallRounds of [0, 1, 5]) {
        const top = assemble(messages, { format, keepToolCallRounds }).tokenCount;
        let sawError = false;
        for (let maxTokens = top + 2; maxTokens >= 1; maxTokens--) {
          let r: AssembledContext;
          try {
            r = assemble(messages, { format, keepToolCallRounds, maxTokens });
          } catch (error) {
            expect((error as { code: string }).code).toBe('CONTEXT_BUDGET_TOO_SMALL');
            sawError = true;
            continue;
          }
          expect(sawError, 'a smaller budget succeeded after a larger one failed').toBe(false);
          expectWellFormed(r, messages);
          const kept = keptIds(r);
          expect(kept).toContain('m11');
          // the kept messages are the newest ones (the newest user message is the last here)
          const first = Number(kept[0].slice(1));
          expect(kept).toEqual(
            messages
              .slice(first)
              .map((m) => m.id)
              .filter((id) => kept.includes(id)),
          );
          expect(kept).toEqual(messages.slice(first).map((m) => m.id));
        }
        expect(sawError).toBe(true);
      }
    }
  });

  it('a round is kept or dropped whole, parallel calls included', () => {
    for (let maxTokens = full.tokenCount; maxTokens > 0; maxTokens--) {
      let r: AssembledContext;
      try {
        r = assemble(messages, { format: 'OPENAI_CHAT', system: 'sys', maxTokens });
      } catch (error) {
        // Below what the newest user message needs: nothing smaller can succeed.
        expect((error as { code: string }).code).toBe('CONTEXT_BUDGET_TOO_SMALL');
        break;
      }
      const kept = new Set(keptIds(r));
      for (const round of [
        ['m1', 'm2'],
        ['m3', 'm4'],
        ['m7', 'm8', 'm9'],
      ]) {
        const inContext = round.filter((id) => kept.has(id));
        expect(inContext.length === 0 || inContext.length === round.length, `${maxTokens}: ${round}`).toBe(true);
      }
    }
  });

  it('names results that fit but whose call did not DROPPED_TOOL_PAIR', () => {
    const base = assemble(messages, { format: 'OPENAI_CHAT', keepToolCallRounds: 5 });
    const m = base.messages;
    const costFrom = (id: string) => {
      const at = m.findIndex((x) => x.sourceMessageId === id);
      return m.slice(at).reduce((n, x) => n + x.tokenCount, 3);
    };
    // room for m8..m11 (both result messages of the 3-call round) but not for its call m7
    const r = assemble(messages, { format: 'OPENAI_CHAT', keepToolCallRounds: 5, maxTokens: costFrom('m8') });
    expect(keptIds(r)).toEqual(['m10', 'm11']);
    expect(decisionOf(r, 'm9').decision).toBe('DROPPED_TOOL_PAIR');
    expect(decisionOf(r, 'm8').decision).toBe('DROPPED_TOOL_PAIR');
    expect(decisionOf(r, 'm7').decision).toBe('DROPPED_BUDGET');
    expect(decisionOf(r, 'm9').reason).toMatch(/kept or dropped together/);
  });

  it('keeps the newest user message when the messages after it do not fit (mid-turn tool loop)', () => {
    const midTurn = [
      user(0, 'Do the task.'),
      calls(1, ['a'], 'step 1'),
      results(2, ['a'], () => 'x '.repeat(400)),
      calls(3, ['b']),
      results(4, ['b']),
    ];
    const all = assemble(midTurn, { keepToolCallRounds: 5 });
    const r = assemble(midTurn, { keepToolCallRounds: 5, maxTokens: all.tokenCount - 10 });
    expect(keptIds(r)).toEqual(['m0', 'm3', 'm4']);
    expectWellFormed(r, midTurn);
  });
});

describe('assembleContext: the pipeline steps together', () => {
  it('drops generating messages first, and the tool pairs they break, with reasons', () => {
    const messages = [
      user(0, 'q'),
      calls(1, ['a']),
      msg(2, 'TOOL', [result('a')], { generating: true }),
      assistant(3, 'half an ans', { generating: true }),
      user(4, 'q2'),
    ];
    const r = assemble(messages);
    expect(keptIds(r)).toEqual(['m0', 'm4']);
    expect(decisionOf(r, 'm2').decision).toBe('DROPPED_GENERATING');
    expect(decisionOf(r, 'm3').decision).toBe('DROPPED_GENERATING');
    expect(decisionOf(r, 'm1').decision).toBe('DROPPED_TOOL_PAIR');
    expect(decisionOf(r, 'm1').reason).toMatch(/still being generated/);
    expectWellFormed(r, messages);
  });

  it('a compaction that splits a round drops the orphan result and says why', () => {
    const messages = [user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a', 'b']), assistant(3, 'ok'), user(4, 'next')];
    const compaction: DomainCompaction = { id: 'cmp', uptoIndex: 2, summary: 'Asked q; two tools were called.', tokens: null };
    const r = assemble(messages, {}, { compaction });
    expect(keptIds(r)).toEqual(['m3', 'm4']);
    expect(decisionOf(r, 'm0').decision).toBe('SUMMARIZED');
    expect(decisionOf(r, 'm1').decision).toBe('SUMMARIZED');
    expect(decisionOf(r, 'm2').decision).toBe('DROPPED_TOOL_PAIR');
    expect(decisionOf(r, 'm2').reason).toMatch(/summarized by the compaction/);
    expect(r.summaryIncluded).toBe(true);
    expect(r.messages[0]).toMatchObject({ kind: 'summary', role: 'SYSTEM', sourceMessageId: null });
    expect(r.droppedMessageCount).toBe(1);
    expectWellFormed(r, messages);
  });

  it('the summary goes after the system prompt and before every message', () => {
    const r = assemble(
      [user(0, 'a'), user(1, 'b')],
      { system: 'sys' },
      { compaction: { id: 'c', uptoIndex: 1, summary: 'S', tokens: null } },
    );
    expect(r.messages.map((m) => m.kind)).toEqual(['system', 'summary', 'message']);
  });

  it('a compaction covering every message leaves the summary; the turn context goes last', () => {
    const r = assemble(
      [user(0, 'a'), assistant(1, 'b')],
      { turnContext: { k: 1 } },
      { compaction: { id: 'c', uptoIndex: 2, summary: 'S', tokens: null } },
    );
    expect(r.messages.map((m) => m.kind)).toEqual(['summary', 'turnContext']);
    expectWellFormed(r, [user(0, 'a'), assistant(1, 'b')]);
  });

  it("keeps the session's leading system message outside maxMessages and first in the budget (keepSystemMessage)", () => {
    const messages = [
      msg(0, 'SYSTEM', [text('You are terse.')]),
      user(1, 'a'),
      assistant(2, 'b'),
      user(3, 'c'),
      assistant(4, 'd'),
      user(5, 'e'),
    ];
    const capped = assemble(messages, { maxMessages: 1 });
    expect(capped.messages.map((m) => m.sourceIndex)).toEqual([0, 5]);
    expect(capped.decisions[0]).toMatchObject({ decision: 'KEPT', reason: expect.stringContaining('keepSystemMessage') });
    const whole = assemble(messages);
    const systemCost = whole.messages[0].tokenCount;
    const userCost = whole.messages[5].tokenCount;
    const tight = assemble(messages, { maxTokens: 3 + systemCost + userCost });
    expect(tight.messages.map((m) => m.sourceIndex)).toEqual([0, 5]);
    expect(tight.tokenCount).toBe(3 + systemCost + userCost);
    const tooSmall = (() => {
      try {
        assemble(messages, { maxTokens: 3 + systemCost + userCost - 1 });
      } catch (error) {
        return error as { code: string; message: string };
      }
    })();
    expect(tooSmall?.code).toBe('CONTEXT_BUDGET_TOO_SMALL');
    expect(tooSmall?.message).toContain('leading system message');
    // Switched off: an ordinary message again.
    expect(assemble(messages, { maxMessages: 1, keepSystemMessage: false }).messages.map((m) => m.sourceIndex)).toEqual([5]);
  });

  it('keeps the leading system message a compaction covers, ahead of the summary, with its reason (keepSystemMessage)', () => {
    const messages = [system(0, 'Answer in French.'), user(1, 'a'), assistant(2, 'b'), user(3, 'c'), assistant(4, 'd'), user(5, 'e')];
    const compaction = { id: 'c', uptoIndex: 3, summary: 'S', tokens: null };
    for (const format of ['GENERIC', 'OPENAI_CHAT', 'ANTHROPIC_MESSAGES'] as const) {
      const r = assemble(messages, { maxMessages: 1, system: 'P', format }, { compaction });
      expect(r.messages.map((m) => [m.kind, m.sourceIndex])).toEqual([
        ['system', null],
        ['message', 0],
        ['summary', null],
        ['message', 5],
      ]);
      expect(r.decisions.map((d) => d.decision)).toEqual([
        'KEPT',
        'SUMMARIZED',
        'SUMMARIZED',
        'DROPPED_MAX_MESSAGES',
        'DROPPED_MAX_MESSAGES',
        'KEPT',
      ]);
      expect(r.decisions[0].reason).toContain('kept rather than summarized by the compaction of messages [0, 3)');
      expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, 3));
    }
    const anthropic = assemble(messages, { format: 'ANTHROPIC_MESSAGES' }, { compaction }).payload as { system: string };
    expect(anthropic.system.startsWith('Answer in French.\n\nSummary of the earlier conversation')).toBe(true);
    // In the budget like any pinned message: counted first, and the budget error names it.
    const whole = assemble(messages, {}, { compaction });
    const needed = whole.tokenCount - whole.messages[3].tokenCount - whole.messages[4].tokenCount;
    expect(assemble(messages, { maxTokens: needed }, { compaction }).messages.map((m) => m.sourceIndex)).toEqual([0, null, 5]);
    expect(() => assemble(messages, { maxTokens: needed - 1 }, { compaction })).toThrow(/leading system message/);
    // Switched off: summarized with the rest.
    const off = assemble(messages, { keepSystemMessage: false }, { compaction });
    expect(off.messages.map((m) => m.sourceIndex)).toEqual([null, 3, 4, 5]);
    expect(off.decisions[0].decision).toBe('SUMMARIZED');
  });

  it('never elides a failed tool result, however old', () => {
    const messages = [
      user(0, 'q'),
      calls(1, ['c1']),
      msg(2, 'TOOL', [result('c1', 'Error: permission denied on /etc/shadow', true)]),
      calls(3, ['c2']),
      results(4, ['c2']),
      user(5, 'next'),
    ];
    const r = assemble(messages, { keepToolCallRounds: 0 });
    expect(r.decisions.map((d) => d.decision)).toEqual(['KEPT', 'KEPT', 'KEPT', 'KEPT', 'ELIDED', 'KEPT']);
    expect(r.elidedToolResultCount).toBe(1);
    expect(r.messages.find((m) => m.sourceIndex === 2)!.parts).toEqual([
      { type: 'toolResult', callId: 'c1', content: 'Error: permission denied on /etc/shadow', isError: true },
    ]);
  });

  it('keepToolCallRounds 0, 1 and more than exist', () => {
    const messages = [
      user(0, 'q'),
      calls(1, ['a']),
      results(2, ['a'], () => 'A'.repeat(300)),
      calls(3, ['b', 'c']),
      results(4, ['b', 'c']),
      user(5, 'q2'),
    ];
    const zero = assemble(messages, { keepToolCallRounds: 0 });
    expect(zero.elidedToolResultCount).toBe(3);
    expect(decisionOf(zero, 'm2').decision).toBe('ELIDED');
    expect(decisionOf(zero, 'm4').decision).toBe('ELIDED');
    expect(decisionOf(zero, 'm1').decision).toBe('KEPT');
    const one = assemble(messages, { keepToolCallRounds: 1 });
    expect(one.elidedToolResultCount).toBe(1);
    const stub = one.messages.find((m) => m.sourceMessageId === 'm2')!;
    expect(stub.parts).toEqual([
      { type: 'toolResult', callId: 'a', content: '[tool result elided: 300 characters]', isError: false, elided: true },
    ]);
    expect(decisionOf(one, 'm2').reason).toMatch(/keepToolCallRounds/);
    const many = assemble(messages, { keepToolCallRounds: 10 });
    expect(many.elidedToolResultCount).toBe(0);
    for (const r of [zero, one, many]) expectWellFormed(r, messages);
    expect(one.tokenCount).toBeLessThan(many.tokenCount);
  });

  it('maxMessages keeps the newest messages, counting no synthetic block', () => {
    const messages = [user(0, 'a'), assistant(1, 'b'), user(2, 'c'), assistant(3, 'd'), user(4, 'e')];
    const r = assemble(
      messages,
      { maxMessages: 2, system: 'sys', turnContext: { x: 1 } },
      { compaction: { id: 'c', uptoIndex: 1, summary: 'S', tokens: null } },
    );
    expect(keptIds(r)).toEqual(['m3', 'm4']);
    expect(r.messages.map((m) => m.kind)).toEqual(['system', 'summary', 'message', 'turnContext', 'message']);
    expect(decisionOf(r, 'm1').decision).toBe('DROPPED_MAX_MESSAGES');
    expect(r.truncated).toBe(true);
    expectWellFormed(r, messages);
    const one = assemble(messages, { maxMessages: 1 });
    expect(keptIds(one)).toEqual(['m4']);
  });

  it('puts the turn context right before the last user message, even with messages after it', () => {
    const messages = [user(0, 'a'), user(1, 'do it'), calls(2, ['t']), results(3, ['t'])];
    const r = assemble(messages, { turnContext: { b: 2, a: 1 } });
    expect(r.messages.map((m) => m.kind + ':' + (m.sourceMessageId ?? ''))).toEqual([
      'message:m0',
      'turnContext:',
      'message:m1',
      'message:m2',
      'message:m3',
    ]);
    expect(r.messages[1]).toMatchObject({ role: 'USER', parts: [{ type: 'text', text: '<turn_context>{"a":1,"b":2}</turn_context>' }] });
    expectWellFormed(r, messages);
  });

  it('counts attachments and the turn context in the budget (NEWEST_FIRST: as much as fits)', () => {
    const big = 'lorem ipsum dolor sit amet '.repeat(200);
    const messages = [user(0, 'first question'), assistant(1, 'first answer'), msg(2, 'USER', [text('see file'), attachmentPart('f')])];
    const extra = { attachments: [textAttachment('f', big)] };
    const all = assemble(messages, {}, extra);
    const blockTokens = countTokens(`<attachment name="f.txt" mime="text/plain">\n${big}\n</attachment>`, 'O200K_BASE');
    expect(all.messages[2].tokenCount).toBe(messages[2].tokens!.O200K_BASE + blockTokens + 4);
    // a budget that would fit everything without the attachment drops older messages with it
    const r = assemble(messages, { maxTokens: all.tokenCount - 1, cacheStrategy: 'NEWEST_FIRST' }, extra);
    expect(keptIds(r)).toEqual(['m1', 'm2']);
    // the turn context block (with its framing) is reserved before any older message
    const turnContext = { note: 'x' };
    const tcTokens = countTokens('<turn_context>{"note":"x"}</turn_context>', 'O200K_BASE') + 4;
    const m0Tokens = all.messages[0].tokenCount;
    const withContext = assemble(messages, { maxTokens: all.tokenCount + tcTokens - 1, turnContext, cacheStrategy: 'NEWEST_FIRST' }, extra);
    expect(keptIds(withContext)).toEqual(['m1', 'm2']);
    expect(withContext.tokenCount).toBe(all.tokenCount + tcTokens - m0Tokens);
    expect(keptIds(assemble(messages, { maxTokens: all.tokenCount + tcTokens, turnContext }, extra))).toEqual(['m0', 'm1', 'm2']);
  });

  it('reports attachment problems of kept messages, never dropping an attachment silently', () => {
    const messages = [
      msg(0, 'USER', [
        text('look'),
        attachmentPart('missing', 'gone.txt'),
        attachmentPart('img', 'a.png', 'image/png'),
        attachmentPart('big'),
      ]),
    ];
    const r = assemble(
      messages,
      { attachmentMaxChars: 10 },
      {
        attachments: [{ id: 'img', name: 'a.png', mimeType: 'image/png', size: 3, content: null }, textAttachment('big', '🎉'.repeat(20))],
      },
    );
    expect(r.attachmentProblems.map((p) => [p.attachmentId, p.problem])).toEqual([
      ['missing', 'MISSING'],
      ['img', 'NOT_TEXT'],
      ['big', 'TRUNCATED'],
    ]);
    const texts = r.messages[0].parts.map((p) => (p.type === 'text' ? p.text : ''));
    expect(texts).toHaveLength(4);
    expect(texts[1]).toContain('omitted="missing"');
    expect(texts[3]).toContain(`>\n${'🎉'.repeat(5)}\n</attachment>`);
  });

  it('uses stored token counts and never re-tokenizes a stored message', () => {
    const stored = { ...user(0, 'hi'), tokens: { O200K_BASE: 1000, CL100K_BASE: 2000 } };
    expect(assemble([stored], { format: 'OPENAI_CHAT' }).tokenCount).toBe(1000 + 4 + 3);
    expect(assemble([stored], { format: 'OPENAI_CHAT', encoding: 'CL100K_BASE' }).tokenCount).toBe(2000 + 4 + 3);
    // CHARS_DIV_4 is computed, and a message without stored counts is counted on demand
    expect(assemble([stored], { format: 'OPENAI_CHAT', encoding: 'CHARS_DIV_4' }).tokenCount).toBe(1 + 4 + 3);
    expect(assemble([{ ...stored, tokens: null }], { format: 'OPENAI_CHAT' }).tokenCount).toBe(countTokens('hi', 'O200K_BASE') + 4 + 3);
  });

  it('echoes the flags and the options', () => {
    const input = makeInput([user(0, 'q')], { maxTokens: 500, maxMessages: 9, encoding: 'CL100K_BASE', format: 'ANTHROPIC_MESSAGES' });
    input.flags = { isFork: true, isFirstTurn: true, hasConnectorSwap: true };
    const r = runAssembly(input);
    expect(r).toMatchObject({
      isFork: true,
      isFirstTurn: true,
      hasConnectorSwap: true,
      maxTokens: 500,
      maxMessages: 9,
      encoding: 'CL100K_BASE',
      format: 'ANTHROPIC_MESSAGES',
    });
    input.flags = { isFork: false, isFirstTurn: false, hasConnectorSwap: false };
    expect(runAssembly(input)).toMatchObject({ isFork: false, isFirstTurn: false, hasConnectorSwap: false });
  });

  it('never writes to its input', () => {
    const messages = toolSession();
    const before = JSON.stringify(messages);
    const deepFreeze = (o: unknown): unknown => {
      if (o && typeof o === 'object') {
        Object.values(o).forEach(deepFreeze);
        Object.freeze(o);
      }
      return o;
    };
    deepFreeze(messages);
    expect(() => assemble(messages, { maxTokens: 200, keepToolCallRounds: 0 })).not.toThrow();
    expect(JSON.stringify(messages)).toBe(before);
  });
});

describe('assembleContext: ANTHROPIC_MESSAGES starts with a user turn', () => {
  const firstRoles = (r: AssembledContext) => (r.payload as AnthropicMessagesPayload).messages.map((m) => m.role);

  it('at every budget the payload starts with a user turn, alternates, and fits', () => {
    const messages = [
      assistant(0, 'Welcome! How can I help?'),
      ...toolSession().map((m) => ({ ...m, index: m.index + 1, id: `n${m.index + 1}` })),
    ];
    const top = assemble(messages, { format: 'ANTHROPIC_MESSAGES' }).tokenCount;
    let placeholders = 0;
    for (let maxTokens = top + 20; maxTokens > 0; maxTokens--) {
      let r: AssembledContext;
      try {
        r = assemble(messages, { format: 'ANTHROPIC_MESSAGES', maxTokens });
      } catch (error) {
        expect((error as { code: string }).code).toBe('CONTEXT_BUDGET_TOO_SMALL');
        break;
      }
      const roles = firstRoles(r);
      expect(roles[0], `maxTokens ${maxTokens}`).toBe('user');
      roles.forEach((role, i) => i > 0 && expect(role).not.toBe(roles[i - 1]));
      expect(r.tokenCount).toBeLessThanOrEqual(maxTokens);
      const lead = r.messages.find((m) => m.sourceMessageId === null && m.role === 'USER' && m.kind === 'system');
      if (lead) {
        placeholders++;
        expect(lead.parts).toEqual([{ type: 'text', text: LEADING_USER_TEXT }]);
        expect(r.messages.filter((m) => m.role !== 'SYSTEM')[0]).toBe(lead);
      }
    }
    expect(placeholders).toBeGreaterThan(0);
  });

  it('a compaction boundary before an assistant message gets the placeholder, counted', () => {
    const messages = [user(0, 'a'), assistant(1, 'b'), user(2, 'c')];
    const compaction = { id: 'c', uptoIndex: 1, summary: 'S', tokens: null };
    const r = assemble(messages, { format: 'ANTHROPIC_MESSAGES' }, { compaction });
    // The summary stands in for the user turn the API needs, instead of a placeholder.
    expect(r.payload).toEqual({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Summary of the earlier conversation (message 0):\n\nS' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'b' }] },
        { role: 'user', content: [{ type: 'text', text: 'c' }] },
      ],
    });
    expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, 3));
    // other formats do not get it
    expect(assemble(messages, { format: 'OPENAI_CHAT' }, { compaction }).messages.map((m) => m.kind)).toEqual([
      'summary',
      'message',
      'message',
    ]);
  });

  it('a compaction covering every user message is not a refusal: summary, then the recent messages', () => {
    const compaction = { id: 'c', uptoIndex: 2, summary: 'S', tokens: null };
    // What the service passes: only the messages after the compaction (or none at all).
    for (const messages of [[assistant(2, 'b'), assistant(3, 'c')], [], [user(0, 'a'), assistant(1, 'x'), assistant(2, 'b')]]) {
      for (const format of ['GENERIC', 'OPENAI_CHAT', 'ANTHROPIC_MESSAGES'] as const) {
        const r = assemble(messages, { format }, { compaction });
        expect(r.summaryIncluded).toBe(true);
        expect(r.hasCompression).toBe(true);
        expect(r.messages[0].kind).toBe('summary');
        expect(r.messages.filter((m) => m.kind === 'message').map((m) => m.sourceIndex)).toEqual(
          messages.filter((m) => m.index >= 2).map((m) => m.index),
        );
        if (format === 'ANTHROPIC_MESSAGES') {
          const payload = r.payload as AnthropicMessagesPayload;
          expect(payload.messages[0]).toEqual({
            role: 'user',
            content: [{ type: 'text', text: r.messages[0].parts[0].type === 'text' ? r.messages[0].parts[0].text : '' }],
          });
          expect(
            payload.messages.some((m) => (m.content as AnthropicBlock[]).some((b) => b.type === 'text' && b.text === LEADING_USER_TEXT)),
          ).toBe(false);
        }
        if (format === 'OPENAI_CHAT') expect((r.payload as OpenAiChatPayload).messages[0].role).toBe('system');
        expect(r.tokenCount).toBe(r.messages.reduce((n, m) => n + m.tokenCount, 3));
      }
    }
    // A budget that holds the summary but not the assistant messages keeps the summary alone.
    const small = assemble([assistant(2, 'b '.repeat(50))], { format: 'ANTHROPIC_MESSAGES', maxTokens: 30 }, { compaction });
    expect(small.messages.map((m) => m.kind)).toEqual(['summary']);
    expect(small.tokenCount).toBeLessThanOrEqual(30);
    // Without a compaction, no user message is still a refusal.
    expect(codeOf(() => assemble([assistant(2, 'b')]))).toBe('BAD_USER_INPUT');
  });

  it('a compaction covering everything still sends one user turn', () => {
    const r = assemble(
      [user(0, 'a'), assistant(1, 'b')],
      { format: 'ANTHROPIC_MESSAGES' },
      { compaction: { id: 'c', uptoIndex: 2, summary: 'S', tokens: null } },
    );
    expect(firstRoles(r)).toEqual(['user']);
    const withContext = assemble(
      [user(0, 'a')],
      { format: 'ANTHROPIC_MESSAGES', turnContext: { a: 1 } },
      { compaction: { id: 'c', uptoIndex: 1, summary: 'S', tokens: null } },
    );
    expect((withContext.payload as AnthropicMessagesPayload).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: '<turn_context>{"a":1}</turn_context>' }] },
    ]);
  });
});

describe('assembleContext: decisions and hash', () => {
  it('explains every input message, whatever happened to it', () => {
    const messages = [
      user(0, 'summarized'),
      assistant(1, 'summarized too'),
      user(2, 'dropped by budget ' + 'x'.repeat(400)),
      calls(3, ['a']),
      results(4, ['a'], () => 'y'.repeat(50)),
      assistant(5, 'generating', { generating: true }),
      results(6, ['zz']),
      calls(7, ['b']),
      results(8, ['b']),
      user(9, 'newest'),
    ];
    const r = assemble(
      messages,
      { keepToolCallRounds: 1, maxTokens: 120 },
      { compaction: { id: 'c', uptoIndex: 2, summary: 'S', tokens: null } },
    );
    expect(r.decisions.map((d) => [d.messageId, d.index, d.decision])).toEqual([
      ['m0', 0, 'SUMMARIZED'],
      ['m1', 1, 'SUMMARIZED'],
      ['m2', 2, 'DROPPED_BUDGET'],
      ['m3', 3, 'KEPT'],
      ['m4', 4, 'ELIDED'],
      ['m5', 5, 'DROPPED_GENERATING'],
      ['m6', 6, 'DROPPED_TOOL_PAIR'],
      ['m7', 7, 'KEPT'],
      ['m8', 8, 'KEPT'],
      ['m9', 9, 'KEPT'],
    ]);
    expect(decisionOf(r, 'm6').reason).toMatch(/no message before it in the history being assembled makes call zz/);
    expect(r.droppedMessageCount).toBe(3);
    expectWellFormed(r, messages);
  });

  it('contextHash is stable for the same inputs and changes with them', () => {
    const input = () => makeInput(toolSession(), { format: 'OPENAI_CHAT', system: 'sys', maxTokens: 300 });
    const h = runAssembly(input()).contextHash;
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(runAssembly(input()).contextHash).toBe(h);
    const changed = input();
    changed.messages = [...changed.messages.slice(0, -1), user(11, 'Great, now explain the change in two sentences.')];
    expect(runAssembly(changed).contextHash).not.toBe(h);
    expect(runAssembly({ ...input(), options: { ...input().options, system: 'sys2' } }).contextHash).not.toBe(h);
    expect(runAssembly({ ...input(), options: { ...input().options, format: 'GENERIC' } }).contextHash).not.toBe(h);
    expect(runAssembly({ ...input(), options: { ...input().options, maxTokens: 200 } }).contextHash).not.toBe(h);
  });

  it('the hash does not depend on key order inside tool arguments', () => {
    const a = [user(0, 'q'), msg(1, 'ASSISTANT', [call('t', 'f', { x: 1, y: 2 })]), results(2, ['t']), user(3, 'q2')];
    const b = [user(0, 'q'), msg(1, 'ASSISTANT', [call('t', 'f', { y: 2, x: 1 })]), results(2, ['t']), user(3, 'q2')];
    expect(assemble(a, { format: 'GENERIC' }).contextHash).toBe(assemble(b, { format: 'GENERIC' }).contextHash);
  });
});

describe('assembleContext: long sessions', () => {
  it('a generated session of mixed content is well formed at many budgets', () => {
    const messages = generateSession(600, 11);
    for (const maxTokens of [400, 1_000, 3_000, 10_000, 50_000]) {
      for (const maxMessages of [null, 7, 50]) {
        const r = assemble(messages, { maxTokens, maxMessages, format: 'OPENAI_CHAT', keepToolCallRounds: 2 });
        expectWellFormed(r, messages);
        expect(keptIds(r)).toContain(messages[messages.length - 1].id);
        expect((r.payload as OpenAiChatPayload).messages[0].role).not.toBe('tool');
      }
    }
  });

  it('10,000 messages at a 128k budget are fitted from stored counts, never re-tokenized', () => {
    // Stored counts twice the real ones: a message re-tokenized would show its real count.
    const messages = generateSession(10_000, 5).map((m) => ({
      ...m,
      tokens: { O200K_BASE: m.tokens!.O200K_BASE * 2, CL100K_BASE: m.tokens!.CL100K_BASE * 2 },
    }));
    // NEWEST_FIRST fills the budget (STABLE_PREFIX may stop down to its lower mark).
    const r = runAssembly(makeInput(messages, { maxTokens: 128_000, format: 'OPENAI_CHAT', cacheStrategy: 'NEWEST_FIRST' }));
    expect(r.tokenCount).toBeLessThanOrEqual(128_000);
    expect(r.tokenCount).toBeGreaterThan(120_000);
    const byId = new Map(messages.map((m) => [m.id, m]));
    let plain = 0;
    for (const m of r.messages) {
      const source = m.sourceMessageId ? byId.get(m.sourceMessageId)! : null;
      if (!source || m.parts.some((p) => p.type === 'toolResult' && p.elided)) continue;
      expect(m.tokenCount).toBe(source.tokens!.O200K_BASE + framingTokens('OPENAI_CHAT', source.role, source.parts));
      plain++;
    }
    expect(plain).toBeGreaterThan(500);
  });
});
