import { describe, expect, it } from 'vitest';
import {
  findToolInvariantViolations,
  runAssembly,
  stablePrefixReason,
  type AssembledContext,
  type AssembleContextOptions,
} from '../../../src/domain/assembly/index.js';
import { budgetReason } from '../../../src/domain/assembly/fit-budget.js';
import type { DomainCompaction, DomainMessage } from '../../../src/domain/types.js';
import { assistant, calls, generateSession, makeInput, msg, results, rng, text, user } from './helpers.js';

const assemble = (messages: DomainMessage[], options: Partial<AssembleContextOptions> = {}, compaction: DomainCompaction | null = null) =>
  runAssembly(makeInput(messages, options, { compaction }));
const keptIds = (r: AssembledContext) => r.messages.flatMap((m) => (m.sourceMessageId ? [m.sourceMessageId] : []));
const firstKept = (r: AssembledContext) => r.messages.find((m) => m.sourceIndex !== null)?.sourceIndex ?? null;

/** A conversation of `turns` user and assistant messages of varied sizes (a reproducible one). */
function conversation(turns: number, seed = 7): DomainMessage[] {
  const random = rng(seed);
  const words = (n: number) => Array.from({ length: n }, (_, k) => `word${(k * 7 + n) % 50}`).join(' ');
  const out: DomainMessage[] = [];
  for (let t = 0; t < turns; t++) {
    out.push(user(out.length, `question ${t}: ${words(20 + Math.floor(random() * 60))}`));
    out.push(assistant(out.length, `answer ${t}: ${words(60 + Math.floor(random() * 140))}`));
  }
  return out;
}

/** Assembles `history` after each of its turns (the newest message a user's, as when a client calls), with `options`. */
function afterEachTurn(history: DomainMessage[], options: Partial<AssembleContextOptions>): AssembledContext[] {
  const out: AssembledContext[] = [];
  for (let n = 1; n <= history.length; n++) {
    if (history[n - 1].role !== 'USER') continue;
    out.push(assemble(history.slice(0, n), options));
  }
  return out;
}

function expectWellFormed(r: AssembledContext, input: DomainMessage[]) {
  expect(findToolInvariantViolations(r.messages)).toEqual([]);
  expect(r.decisions.map((d) => d.messageId)).toEqual(input.map((m) => m.id));
  const kept = new Set(keptIds(r));
  for (const d of r.decisions)
    expect(kept.has(d.messageId), `${d.messageId} ${d.decision}`).toBe(d.decision === 'KEPT' || d.decision === 'ELIDED');
  if (r.maxTokens !== null) expect(r.tokenCount).toBeLessThanOrEqual(r.maxTokens);
}

describe('cacheStrategy STABLE_PREFIX', () => {
  const history = conversation(120);
  const maxTokens = 4_000;

  it('is the default, and a run of appends keeps the same first message until the budget binds again', () => {
    const stable = afterEachTurn(history, { maxTokens, format: 'ANTHROPIC_MESSAGES' });
    const newest = afterEachTurn(history, { maxTokens, format: 'ANTHROPIC_MESSAGES', cacheStrategy: 'NEWEST_FIRST' });
    const bound = newest.findIndex((r) => r.truncated);
    expect(bound).toBeGreaterThan(0);
    let stableMoves = 0;
    let newestMoves = 0;
    for (let i = bound + 1; i < stable.length; i++) {
      expect(stable[i].tokenCount).toBeLessThanOrEqual(maxTokens);
      if (firstKept(stable[i]) !== firstKept(stable[i - 1])) stableMoves++;
      if (firstKept(newest[i]) !== firstKept(newest[i - 1])) newestMoves++;
      // Never more than NEWEST_FIRST keeps: its kept run, from a later start.
      const nf = new Set(keptIds(newest[i]));
      for (const id of keptIds(stable[i])) expect(nf.has(id)).toBe(true);
    }
    // NEWEST_FIRST moves at (nearly) every call; STABLE_PREFIX every few calls, by about the slack.
    expect(newestMoves).toBeGreaterThan((stable.length - bound) * 0.9);
    expect(stableMoves).toBeLessThan(newestMoves / 2.5);
  });

  it('drops down to about maxTokens × (1 − cacheSlack) when it moves', () => {
    const all = afterEachTurn(history, { maxTokens, cacheSlack: 0.3 });
    const moves = all.filter((r, i) => i > 0 && r.truncated && firstKept(r) !== firstKept(all[i - 1]));
    expect(moves.length).toBeGreaterThan(3);
    for (const r of moves) expect(r.tokenCount).toBeLessThanOrEqual(maxTokens);
    // The lower mark counts the messages up to the anchor; those appended after it come on top.
    const mean = moves.reduce((n, r) => n + r.tokenCount, 0) / moves.length;
    expect(mean).toBeLessThanOrEqual(maxTokens * 0.85);
    expect(Math.min(...moves.map((r) => r.tokenCount))).toBeLessThanOrEqual(maxTokens * 0.75);
  });

  it('decides the same start whatever older messages are loaded (the window paging loads the kept run and more)', () => {
    const session = generateSession(600, 11);
    for (const budget of [3_000, 8_000, 20_000]) {
      for (const end of [300, 301, 333, 420, 599, 600]) {
        const messages = session.slice(0, end);
        if (messages[messages.length - 1].role !== 'USER') continue;
        const full = assemble(messages, { maxTokens: budget, format: 'ANTHROPIC_MESSAGES' });
        const newest = assemble(messages, { maxTokens: budget, format: 'ANTHROPIC_MESSAGES', cacheStrategy: 'NEWEST_FIRST' });
        const from = firstKept(newest)!;
        // What a window read loads: the run NEWEST_FIRST keeps and a few messages before it, its edge on no tool result.
        let lo = Math.max(0, from - 3);
        while (lo > 0 && messages[lo].role === 'TOOL') lo--;
        const windowed = assemble(messages.slice(lo), { maxTokens: budget, format: 'ANTHROPIC_MESSAGES' });
        expect(keptIds(windowed), `budget ${budget}, ${end} messages`).toEqual(keptIds(full));
        // The same payload, cache_control marks included.
        expect(windowed.contextHash).toBe(full.contextHash);
        expectWellFormed(full, messages);
      }
    }
  });

  it('keeps tool rounds whole and says why a message is left out for the slack', () => {
    const messages: DomainMessage[] = [];
    for (let t = 0; t < 40; t++) {
      messages.push(user(messages.length, `task ${t}: ${'please look at this '.repeat(8)}`));
      messages.push(calls(messages.length, [`c${t}a`, `c${t}b`], 'Looking.'));
      messages.push(results(messages.length, [`c${t}a`, `c${t}b`], (id) => `output of ${id} `.repeat(20)));
      messages.push(assistant(messages.length, `done with task ${t}. ${'summary words '.repeat(15)}`));
    }
    messages.push(user(messages.length, 'next task'));
    const budget = 3_000;
    const slack = stablePrefixReason(budget, 0.3);
    let sawSlack = false;
    for (let end = 100; end <= messages.length; end++) {
      const slice = messages.slice(0, end);
      if (slice[slice.length - 1].role !== 'USER') continue;
      const r = assemble(slice, { maxTokens: budget, keepToolCallRounds: 1 });
      expectWellFormed(r, slice);
      const first = r.messages.find((m) => m.sourceIndex !== null)!;
      expect(first.role).not.toBe('TOOL');
      for (const d of r.decisions) {
        if (d.reason === slack) {
          sawSlack = true;
          expect(d.decision).toBe('DROPPED_BUDGET');
        }
        expect(d.decision).not.toBe('DROPPED_TOOL_PAIR');
      }
      // A round is on one side of the start: its results share its call's fate.
      const decision = new Map(r.decisions.map((d) => [d.index, d.decision]));
      const keptLike = (d: string | undefined) => d === 'KEPT' || d === 'ELIDED';
      for (const m of slice) {
        if (m.role !== 'TOOL') continue;
        let head = m.index - 1;
        while (slice[head].role === 'TOOL') head--;
        expect(keptLike(decision.get(m.index)), `#${m.index}`).toBe(keptLike(decision.get(head)));
        if (!keptLike(decision.get(head))) expect(decision.get(m.index)).toBe(decision.get(head));
      }
    }
    expect(sawSlack).toBe(true);
  });

  it('gives the older messages, which do not fit at all, the budget reason', () => {
    const messages = history.slice(0, 161);
    const r = assemble(messages, { maxTokens });
    const newest = assemble(messages, { maxTokens, cacheStrategy: 'NEWEST_FIRST' });
    const from = firstKept(newest)!;
    const reasons = new Map(r.decisions.map((d) => [d.index, d.reason]));
    for (let i = 0; i < from; i++) expect(reasons.get(i)).toBe(budgetReason(maxTokens));
    for (let i = from; i < firstKept(r)!; i++) expect(reasons.get(i)).toBe(stablePrefixReason(maxTokens, 0.3));
    expect(firstKept(r)!).toBeGreaterThan(from);
  });

  it('applies after a compaction: the summary first, then the messages from the stable start', () => {
    const compaction: DomainCompaction = { id: 'c', uptoIndex: 60, summary: 'The first sixty messages, summarized.', tokens: null };
    const messages = history.slice(0, 201);
    const r = assemble(messages, { maxTokens, format: 'ANTHROPIC_MESSAGES' }, compaction);
    expectWellFormed(r, messages);
    expect(r.messages[0].kind).toBe('summary');
    const decisions = new Map(r.decisions.map((d) => [d.index, d.decision]));
    for (let i = 0; i < 60; i++) expect(decisions.get(i)).toBe('SUMMARIZED');
    // Appending keeps the start (the same stretch of history), until the budget binds again.
    const next = assemble(history.slice(0, 203), { maxTokens, format: 'ANTHROPIC_MESSAGES' }, compaction);
    const starts = [firstKept(r), firstKept(next)];
    const later = assemble(history.slice(0, 205), { maxTokens, format: 'ANTHROPIC_MESSAGES' }, compaction);
    starts.push(firstKept(later));
    expect(new Set(starts).size).toBeLessThanOrEqual(2);
  });

  it('keeps the newest user message when an agent loop after it does not fit, and stays within the budget', () => {
    const messages: DomainMessage[] = [...history.slice(0, 20), user(20, 'Run the whole test suite and fix what fails.')];
    for (let k = 0; k < 30; k++) {
      messages.push(calls(messages.length, [`run${k}`]));
      messages.push(results(messages.length, [`run${k}`], () => `test output line ${k} `.repeat(30)));
    }
    messages.push(msg(messages.length, 'ASSISTANT', [text('All green.')]));
    const r = assemble(messages, { maxTokens: 2_500, keepToolCallRounds: 100 });
    expectWellFormed(r, messages);
    expect(keptIds(r)).toContain('m20');
  });

  it('NEWEST_FIRST, or no binding budget, is unchanged; cacheSlack 0 never drops below what fits', () => {
    const messages = history.slice(0, 41);
    const unbounded = assemble(messages);
    expect(keptIds(assemble(messages, { maxTokens: unbounded.tokenCount }))).toEqual(keptIds(unbounded));
    const r = assemble(messages, { maxTokens: 3_000, cacheSlack: 0 });
    const newest = assemble(messages, { maxTokens: 3_000, cacheStrategy: 'NEWEST_FIRST' });
    expect(keptIds(r)).toEqual(keptIds(newest));
  });

  it('refuses a cacheSlack outside [0, 1) and an unknown cacheStrategy with BAD_USER_INPUT', () => {
    const messages = history.slice(0, 3);
    for (const cacheSlack of [-0.1, 1, 1.5, Number.NaN]) {
      expect(() => assemble(messages, { maxTokens: 1_000, cacheSlack })).toThrow(/cacheSlack must be a number from 0 up to/);
    }
    expect(() => assemble(messages, { cacheStrategy: 'OLDEST' as never })).toThrow(
      /cacheStrategy must be one of STABLE_PREFIX, NEWEST_FIRST/,
    );
  });
});
