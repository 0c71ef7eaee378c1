/** Every pipeline step on its own. */
import { describe, expect, it } from 'vitest';
import {
  applyCompaction,
  capMaxMessages,
  dropGenerating,
  elideOldToolResults,
  fitTokenBudget,
  renderSummary,
  toolResultStub,
  toolResultStubTokens,
  toWork,
  workContentTokens,
  workParts,
  countCodePoints,
  type WorkMessage,
} from '../../../src/domain/assembly/index.js';
import { countTokens } from '../../../src/domain/tokens.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { assistant, calls, msg, result, results, text, user } from './helpers.js';

const work = (messages: DomainMessage[]) => messages.map(toWork);
const ids = (list: readonly WorkMessage[]) => list.map((w) => w.source.id);

describe('dropGenerating', () => {
  it('drops only messages still being generated, with a reason', () => {
    const r = dropGenerating(work([user(0, 'q'), assistant(1, 'partial', { generating: true }), user(2, 'q2')]));
    expect(ids(r.list)).toEqual(['m0', 'm2']);
    expect(r.removed).toEqual([
      { message: expect.objectContaining({ id: 'm1' }), decision: 'DROPPED_GENERATING', reason: expect.stringMatching(/generated/) },
    ]);
  });
});

describe('applyCompaction', () => {
  const list = work([user(0, 'a'), assistant(1, 'b'), user(2, 'c'), assistant(3, 'd')]);

  it('without a compaction changes nothing', () => {
    const r = applyCompaction(list, null);
    expect(ids(r.list)).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(r.summaryText).toBeNull();
  });

  it('replaces messages before uptoIndex by the summary', () => {
    const compaction = { id: 'c1', uptoIndex: 2, summary: 'They said a and b.', tokens: null };
    const r = applyCompaction(list, compaction);
    expect(ids(r.list)).toEqual(['m2', 'm3']);
    expect(r.removed.map((x) => [x.message.id, x.decision])).toEqual([
      ['m0', 'SUMMARIZED'],
      ['m1', 'SUMMARIZED'],
    ]);
    expect(r.summaryText).toBe(renderSummary(compaction));
    expect(r.summaryText).toContain('They said a and b.');
    expect(r.summaryText).toContain('messages 0-1');
  });

  it('uses absolute indexes (an inherited fork prefix counts)', () => {
    const shifted = work([user(10, 'a'), user(11, 'b')]);
    const r = applyCompaction(shifted, { id: 'c', uptoIndex: 11, summary: 's', tokens: null });
    expect(ids(r.list)).toEqual(['m11']);
  });
});

describe('elideOldToolResults', () => {
  const list = work([
    user(0, 'q'),
    calls(1, ['a']),
    results(2, ['a'], () => 'x'.repeat(1234)),
    calls(3, ['b', 'c']),
    results(4, ['b']),
    results(5, ['c']),
    calls(6, ['d']),
    results(7, ['d']),
    user(8, 'q2'),
  ]);

  it('keeps the last N rounds and stubs older results, calls kept', () => {
    const r = elideOldToolResults(list, 1);
    expect(r.roundCount).toBe(3);
    expect([...r.elidedMessageIds]).toEqual(['m2', 'm4', 'm5']);
    expect(ids(r.list)).toEqual(ids(list));
    const stubbed = r.list[2];
    expect(workParts(stubbed)).toEqual([
      { type: 'toolResult', callId: 'a', content: '[tool result elided: 1234 characters]', isError: false },
    ]);
    expect(workParts(r.list[1])).toBe(list[1].source.parts);
    expect(workParts(r.list[7])).toBe(list[7].source.parts);
  });

  it('keepToolCallRounds 0 elides every round', () => {
    expect([...elideOldToolResults(list, 0).elidedMessageIds]).toEqual(['m2', 'm4', 'm5', 'm7']);
  });

  it('keepToolCallRounds above the number of rounds elides nothing', () => {
    expect(elideOldToolResults(list, 3).elidedMessageIds.size).toBe(0);
    expect(elideOldToolResults(list, 50).elidedMessageIds.size).toBe(0);
  });

  it('counts a stub fresh, not with the stored count of the full result', () => {
    const r = elideOldToolResults(list, 0);
    const tokens = workContentTokens(r.list[2], 'O200K_BASE');
    expect(tokens).toBe(countTokens('[tool result elided: 1234 characters]', 'O200K_BASE'));
    expect(tokens).toBeLessThan(list[2].source.tokens!.O200K_BASE);
  });

  it('stub length counts code points, not UTF-16 units', () => {
    expect(toolResultStub('😀😀é')).toBe('[tool result elided: 3 characters]');
    expect(countCodePoints('😀a\uD800')).toBe(3);
  });
});

describe('toolResultStubTokens', () => {
  it('equals the real count of the stub for many lengths, in both encodings', () => {
    for (const encoding of ['O200K_BASE', 'CL100K_BASE', 'CHARS_DIV_4'] as const) {
      for (let n = 0; n < 2_000_000; n = n * 3 + 7) {
        expect(toolResultStubTokens(n, encoding), `${encoding} ${n}`).toBe(countTokens(`[tool result elided: ${n} characters]`, encoding));
      }
      for (const n of [9, 10, 99, 100, 999, 1000, 1001, 10000, 100000, 1000000, 10000000]) {
        expect(toolResultStubTokens(n, encoding)).toBe(countTokens(`[tool result elided: ${n} characters]`, encoding));
      }
    }
  });
});

describe('capMaxMessages', () => {
  const list = work([user(0, 'a'), assistant(1, 'b'), user(2, 'c'), calls(3, ['x', 'y']), results(4, ['x', 'y']), assistant(5, 'e')]);

  it('null keeps everything', () => {
    expect(ids(capMaxMessages(list, null).list)).toEqual(ids(list));
  });

  it('keeps the newest, whole rounds, and the newest user message', () => {
    // newest user message m2 (1) + m5 (1) = 2; the round m3+m4 (2) does not fit in 3, so the cut stops there
    const r = capMaxMessages(list, 3);
    expect(ids(r.list)).toEqual(['m2', 'm5']);
    const byId = Object.fromEntries(r.removed.map((x) => [x.message.id, x.decision]));
    expect(byId).toEqual({ m0: 'DROPPED_MAX_MESSAGES', m1: 'DROPPED_MAX_MESSAGES', m3: 'DROPPED_MAX_MESSAGES', m4: 'DROPPED_TOOL_PAIR' });
  });

  it('keeps a contiguous tail when it reaches the newest user message', () => {
    expect(ids(capMaxMessages(list, 4).list)).toEqual(['m2', 'm3', 'm4', 'm5']);
    expect(ids(capMaxMessages(list, 5).list)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
  });

  it('1 keeps only the newest user message', () => {
    expect(ids(capMaxMessages(list, 1).list)).toEqual(['m2']);
  });
});

describe('fitTokenBudget', () => {
  // Costs injected: each message costs the number in its text.
  const costly = (i: number, role: 'USER' | 'ASSISTANT', cost: number) => msg(i, role, [text(String(cost))]);
  const costOf = (w: WorkMessage) => {
    const p = w.source.parts[0];
    return p.type === 'text' ? Number(p.text) : 5;
  };
  const list = work([
    costly(0, 'USER', 10),
    costly(1, 'ASSISTANT', 20),
    costly(2, 'USER', 30),
    msg(3, 'ASSISTANT', [call5()]),
    msg(4, 'TOOL', [result('t')]),
    costly(5, 'ASSISTANT', 40),
  ]);
  function call5() {
    return { type: 'toolCall' as const, callId: 't', name: 'n', arguments: {} };
  }
  const fit = (maxTokens: number | null, fixedTokens = 0) =>
    fitTokenBudget(list, { maxTokens, fixedTokens, fixedParts: [`${fixedTokens} fixed`], costOf });

  it('no budget keeps everything', () => {
    expect(ids(fit(null).list)).toEqual(ids(list));
    expect(fit(null).usedTokens).toBeNull();
  });

  it('keeps everything when it exactly fits', () => {
    const r = fit(10 + 20 + 30 + 5 + 5 + 40 + 7, 7);
    expect(ids(r.list)).toEqual(ids(list));
    expect(r.usedTokens).toBe(117);
  });

  it('one token below drops the oldest', () => {
    const r = fit(116, 7);
    expect(ids(r.list)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
    expect(r.removed.map((x) => [x.message.id, x.decision])).toEqual([['m0', 'DROPPED_BUDGET']]);
  });

  it('never keeps half a round: results that would fit alone are tool-pair drops', () => {
    // newest user message (30) + m5 (40) = 70; the round costs 10 and only 9 are left: m4 (5) would fit alone
    const r = fit(79);
    expect(ids(r.list)).toEqual(['m2', 'm5']);
    const byId = Object.fromEntries(r.removed.map((x) => [x.message.id, x.decision]));
    expect(byId).toEqual({ m0: 'DROPPED_BUDGET', m1: 'DROPPED_BUDGET', m3: 'DROPPED_BUDGET', m4: 'DROPPED_TOOL_PAIR' });
  });

  it('keeps the newest user message even when newer messages do not fit', () => {
    expect(ids(fit(30).list)).toEqual(['m2']);
  });

  it('refuses with CONTEXT_BUDGET_TOO_SMALL when the newest user message cannot fit, saying what is needed', () => {
    expect(() => fit(29)).toThrowError(expect.objectContaining({ code: 'CONTEXT_BUDGET_TOO_SMALL' }));
    expect(() => fit(35, 6)).toThrowError(/needs 36 tokens.*takes 30 tokens.*6 fixed.*at least 36/);
  });
});
