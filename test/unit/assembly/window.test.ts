import { describe, expect, it } from 'vitest';
import { budgetReason } from '../../../src/domain/assembly/fit-budget.js';
import { summarizedReason } from '../../../src/domain/assembly/compaction.js';
import { toolResultStubTokens } from '../../../src/domain/assembly/work.js';
import { earlierDecisions, firstPageSize, trimWindowEdge, WindowPlan, type WindowRow } from '../../../src/domain/assembly/window.js';

const row = (position: number, role: WindowRow['role'], tokens: number | null, extra: Partial<WindowRow> = {}): WindowRow => ({
  position,
  role,
  generating: false,
  toolResultIds: [],
  tokensO200k: tokens,
  tokensCl100k: tokens,
  ...extra,
});
const paging = { first: 4, min: 2, max: 8, margin: 1 };

describe('the window-paging rule', () => {
  it('counts a lower bound per message (a tool result at most as its stub, a generating one as nothing) and stops a margin past the budget once a user message is seen', () => {
    const plan = new WindowPlan(20, 'O200K_BASE', paging);
    expect(plan.take(row(9, 'ASSISTANT', 5))).toBe(true); // 6
    expect(plan.take(row(8, 'TOOL', 1_000, { toolResultIds: ['a'] }))).toBe(true); // + stub, once its call is read
    expect(plan.take(row(7, 'ASSISTANT', 1, { toolCallIds: ['a'] }))).toBe(true); // + 2 + stub
    expect(plan.take(row(6, 'ASSISTANT', null, { generating: true }))).toBe(true); // + 0
    expect(plan.costPerRow).toBe((8 + toolResultStubTokens(0, 'O200K_BASE')) / 4);
    expect(plan.take(row(6, 'ASSISTANT', 100))).toBe(true); // over the budget: margin of 1 starts
    expect(plan.done).toBe(false);
    expect(plan.take(row(5, 'ASSISTANT', 1))).toBe(true);
    expect(plan.done).toBe(false); // no user message yet
    expect(plan.take(row(4, 'USER', 1))).toBe(true);
    expect(plan.done).toBe(true);
  });

  it('counts nothing of a round the pipeline drops for pairing (a call unanswered, or answered by a generating result)', () => {
    const unanswered = new WindowPlan(20, 'O200K_BASE', paging);
    unanswered.take(row(9, 'USER', 1));
    unanswered.take(row(8, 'ASSISTANT', 5_000, { toolCallIds: ['a'] }));
    expect(unanswered.done).toBe(false);
    expect(unanswered.costPerRow).toBe(2 / 2);
    const generating = new WindowPlan(20, 'O200K_BASE', paging);
    generating.take(row(9, 'USER', 1));
    generating.take(row(8, 'TOOL', null, { generating: true, toolResultIds: ['a'] }));
    generating.take(row(7, 'ASSISTANT', 5_000, { toolCallIds: ['a'] }));
    expect(generating.done).toBe(false);
    const partial = new WindowPlan(20, 'O200K_BASE', paging);
    partial.take(row(9, 'USER', 1));
    partial.take(row(8, 'TOOL', 1, { toolResultIds: ['a'] }));
    partial.take(row(7, 'ASSISTANT', 5_000, { toolCallIds: ['a', 'b'] }));
    expect(partial.done).toBe(false);
    // A complete round counts.
    const complete = new WindowPlan(20, 'O200K_BASE', paging);
    complete.take(row(9, 'USER', 1));
    complete.take(row(8, 'TOOL', 1, { toolResultIds: ['a'] }));
    complete.take(row(7, 'ASSISTANT', 5_000, { toolCallIds: ['a'] }));
    complete.take(row(6, 'USER', 1));
    complete.take(row(5, 'USER', 1));
    expect(complete.done).toBe(true);
  });

  it('gives up bounding at a finished message without a stored count', () => {
    expect(new WindowPlan(100, 'CL100K_BASE', paging).take(row(0, 'USER', null))).toBe(false);
  });

  it('sizes pages from the cost seen, within the paging limits', () => {
    const plan = new WindowPlan(1_000, 'O200K_BASE', paging);
    expect(plan.nextPageSize()).toBe(paging.first);
    plan.take(row(3, 'USER', 9));
    expect(plan.nextPageSize()).toBe(paging.max);
    expect(firstPageSize(null, 1_000, paging)).toBe(paging.first);
    expect(firstPageSize(500, 1_000, paging)).toBe(5); // ceil(2 × 1.1) + 2 margins
    expect(firstPageSize(1, 1_000, paging)).toBe(paging.max);
  });

  it('drops the tool results at the window edge unless the summary stands before them', () => {
    const window = [row(4, 'TOOL', 1), row(5, 'TOOL', 1), row(6, 'USER', 1)];
    expect(trimWindowEdge(window, 0).map((r) => r.position)).toEqual([6]);
    expect(trimWindowEdge(window, 4).map((r) => r.position)).toEqual([4, 5, 6]);
  });

  it('decides the messages before the window with the reasons the pipeline gives', () => {
    const decisions = earlierDecisions(
      [
        { id: 'a', position: 0 },
        { id: 'b', position: 1 },
      ],
      { lo: 2, compaction: { id: 'c1', uptoIndex: 1 }, maxTokens: 50 },
    );
    expect(decisions).toEqual([
      { messageId: 'a', index: 0, decision: 'SUMMARIZED', reason: summarizedReason({ uptoIndex: 1 }) },
      { messageId: 'b', index: 1, decision: 'DROPPED_BUDGET', reason: budgetReason(50) },
    ]);
  });
});
