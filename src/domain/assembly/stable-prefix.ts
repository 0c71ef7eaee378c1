/**
 * STABLE_PREFIX (cacheStrategy): where a context starts once maxTokens binds, so that the calls
 * that follow send the same first messages and a provider's prompt cache reads them.
 *
 * NEWEST_FIRST (`keepNewestUnits`) keeps the newest messages that fit: once the budget binds, every
 * call starts a message or two later than the one before, and the prefix the provider cached is
 * never sent again. STABLE_PREFIX starts at a point the history fixes, without state:
 *
 * - An anchor is a position of the history. With E the position after the newest message, each
 *   power of two Q ≤ E gives one: A(Q) = ⌊E / Q⌋ × Q. As messages are appended, A(Q) stays where it
 *   is for Q appends, then moves Q positions on.
 * - The start of an anchor, σ(A), is the oldest unit (a message, or a tool round whole) such that
 *   the units from it up to A cost at most the lower mark: maxTokens × (1 − cacheSlack) less the
 *   fixed blocks (the turn-context block left out: it may change at every call). It depends only on
 *   the messages before A, which do not change.
 * - The context starts at σ(A) for the largest Q whose context (the units from σ(A) to the newest,
 *   the newest user message, and the fixed blocks) fits maxTokens. NEWEST_FIRST's cut is taken
 *   when none does.
 *
 * So when the budget binds, the context drops to about the lower mark (an anchor close to the
 * newest message), and its start stays while the messages appended after that anchor fit in the
 * slack: a run of appends keeps the same first message until the budget binds again. The same
 * history gives the same start whatever was loaded with it, and to every caller with the same
 * options: a start is always within NEWEST_FIRST's kept run, and deciding it looks at no message
 * older than the unit right before that run (the window's paging loads more than that).
 *
 * Every rule of the cut holds: units are kept or dropped whole (a call with its results), the
 * newest user message is always kept, the lead cost is counted, and a message left out for the
 * slack is DROPPED_BUDGET with a reason saying so (`stablePrefixReason`).
 */
import type { KeepNewestResult } from './max-messages.js';
import { isRoundHead } from './tool-shape.js';
import type { Removal } from './types.js';
import type { StepResult, WorkMessage } from './work.js';

export interface StablePrefixOptions {
  /** Tokens left for messages (maxTokens less the fixed blocks), as the cut had. */
  capacity: number;
  /** Tokens of messages the lower mark allows: maxTokens × (1 − cacheSlack) less the fixed blocks but the turn context. */
  lowerMark: number;
  /** The position after the session's newest message. */
  historyEnd: number;
  costOf: (w: WorkMessage) => number;
  leadCost?: (first: WorkMessage | null) => number;
  /** The reason of a message left out for the slack. */
  reason: string;
}

/** Why a message that fits maxTokens is left out by STABLE_PREFIX. */
export function stablePrefixReason(maxTokens: number, cacheSlack: number): string {
  const lower = Math.floor(maxTokens * (1 - cacheSlack));
  return `Fits maxTokens (${maxTokens}), but left out with the older messages (cacheStrategy STABLE_PREFIX): when maxTokens binds, the context drops down to maxTokens × (1 − cacheSlack) = ${lower} tokens at a point the history fixes, so that the calls that follow start with the same messages, which a provider's prompt cache reads, until maxTokens binds again.`;
}

/**
 * `cut` (NEWEST_FIRST's, over `list`) moved to STABLE_PREFIX's start, with the tokens its messages
 * use (lead cost included); null when the cut dropped nothing or no anchor's start fits.
 */
export function stablePrefixCut(
  list: readonly WorkMessage[],
  cut: KeepNewestResult,
  options: StablePrefixOptions,
): (StepResult & { used: number }) | null {
  const { runStart, forcedIndex } = cut;
  const E = options.historyEnd;
  if (runStart === 0 || runStart >= list.length || options.lowerMark <= 0 || E < 1) return null;
  const { costOf, lowerMark } = options;
  const leadCost = options.leadCost ?? (() => 0);

  // The units of the kept run, oldest first, and their cumulative costs.
  const starts: number[] = [];
  const cum: number[] = [0];
  for (let i = runStart; i < list.length; ) {
    let end = i + 1;
    if (isRoundHead(list[i].shape)) while (end < list.length && list[end].shape.role === 'TOOL') end++;
    let cost = 0;
    for (let k = i; k < end; k++) cost += costOf(list[k]);
    starts.push(i);
    cum.push(cum[cum.length - 1] + cost);
    i = end;
  }
  const units = starts.length;
  const total = cum[units];
  // The unit right before the run (the one that did not fit): whether a start goes past the run's first unit.
  let before = runStart - 1;
  while (before > 0 && list[before].shape.role === 'TOOL') before--;
  let beforeCost = 0;
  for (let k = before; k < runStart; k++) beforeCost += costOf(list[k]);
  const position = (i: number) => list[i].source.index;

  /** σ(anchor) as an index into `starts`; null when it lies before the run (then the context cannot fit). */
  const startFor = (anchor: number): number | null => {
    // Units of the run that start before the anchor: [0, t).
    let t = 0;
    while (t < units && position(starts[t]) < anchor) t++;
    if (t === 0) return position(before) < anchor && beforeCost > lowerMark ? 0 : null;
    // The oldest i with cum[t] − cum[i] ≤ lowerMark (cum grows, so the sum shrinks with i).
    let lo = 0;
    let hi = t;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[t] - cum[mid] <= lowerMark) hi = mid;
      else lo = mid + 1;
    }
    if (lo === 0 && cum[t] + beforeCost <= lowerMark) return null;
    return lo;
  };

  /** Where the context starting at unit `u` starts in `list` (past the run when no unit of it is kept). */
  const startOf = (u: number) => (u < units ? starts[u] : list.length);

  /** Tokens of the context starting at unit `u` (the newest user message and the lead cost included), null when over capacity. */
  const usedFrom = (u: number): number | null => {
    const from = startOf(u);
    const forcedApart = forcedIndex >= 0 && forcedIndex < from;
    let used = total - cum[u] + (forcedApart ? cut.forcedCost : 0);
    let first: WorkMessage | null = forcedApart ? list[forcedIndex] : null;
    for (let k = from; first === null && k < list.length; k++) if (list[k].shape.role !== 'SYSTEM') first = list[k];
    used += leadCost(first);
    return used <= options.capacity ? used : null;
  };

  let previous = -1;
  for (let q = 2 ** Math.floor(Math.log2(E)); q >= 1; q /= 2) {
    const anchor = Math.floor(E / q) * q;
    if (anchor === previous) continue;
    previous = anchor;
    const u = startFor(anchor);
    if (u === null) continue;
    const used = usedFrom(u);
    if (used === null) continue;
    const from = startOf(u);
    const kept: WorkMessage[] = [];
    if (forcedIndex >= 0 && forcedIndex < from) kept.push(list[forcedIndex]);
    for (let k = from; k < list.length; k++) kept.push(list[k]);
    const removed: Removal[] = [...cut.result.removed];
    for (let k = runStart; k < from; k++) {
      if (k !== forcedIndex) removed.push({ message: list[k].source, decision: 'DROPPED_BUDGET', reason: options.reason });
    }
    return { list: kept, removed, used };
  }
  return null;
}
