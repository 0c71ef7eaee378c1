/**
 * Step 5: fit `maxTokens`, keeping the newest messages. The fixed part (reply priming, system
 * prompt, summary and turn-context blocks) is reserved first, then the newest USER message (always
 * kept: if it cannot fit, CONTEXT_BUDGET_TOO_SMALL says how many tokens are needed), then units
 * newest first until one does not fit. A tool round is one unit, so a call is never separated from
 * its results (parallel calls included) and the list never starts on an orphan result. The cost of
 * a message includes its framing and its resolved attachments. With cacheStrategy STABLE_PREFIX,
 * the cut then moves to where the history fixes it (stable-prefix.ts).
 */
import { DomainError } from '../errors.js';
import { keepNewestUnits, removalFor } from './max-messages.js';
import { stablePrefixCut, stablePrefixReason } from './stable-prefix.js';
import { label, type StepResult, type WorkMessage } from './work.js';

export interface FitBudgetOptions {
  maxTokens: number | null;
  /** Tokens that are always sent: reply priming and the synthetic blocks with their framing. */
  fixedTokens: number;
  /** What the fixed tokens are made of, for the error message, e.g. "system prompt 120". */
  fixedParts: string[];
  /** Tokens of a message with its framing and attachments (called newest first). */
  costOf: (w: WorkMessage) => number;
  /** Tokens that depend on the first non-SYSTEM message kept (see `KeepNewestOptions.leadCost`). */
  leadCost?: (first: WorkMessage | null) => number;
  /**
   * STABLE_PREFIX (stable-prefix.ts): once the budget binds, start where the history fixes, down to
   * maxTokens × (1 − cacheSlack). Absent: NEWEST_FIRST.
   */
  stable?: {
    cacheSlack: number;
    /** Fixed tokens that stay the same from call to call (all but the turn-context block): the lower mark is counted without the others. */
    steadyFixedTokens: number;
    /** The position after the session's newest message. */
    historyEnd: number;
  };
}

export interface FitBudgetResult extends StepResult {
  /** Tokens used by fixed blocks and kept messages (null without a budget). */
  usedTokens: number | null;
}

/** Why a message older than those kept is left out for the budget (one text, whatever path decided it). */
export function budgetReason(maxTokens: number): string {
  return `Does not fit maxTokens (${maxTokens}) after the newer messages kept.`;
}

export function fitTokenBudget(list: readonly WorkMessage[], options: FitBudgetOptions): FitBudgetResult {
  const { maxTokens } = options;
  if (maxTokens === null) return { list: [...list], removed: [], usedTokens: null };
  const capacity = maxTokens - options.fixedTokens;
  const cut = keepNewestUnits(list, {
    capacity,
    costOf: options.costOf,
    leadCost: options.leadCost,
    dropped: removalFor(`Fits maxTokens (${maxTokens}) on its own`, 'DROPPED_BUDGET', budgetReason(maxTokens)),
  });
  const needed = options.fixedTokens + cut.forcedCost + cut.minimalLeadCost;
  if (needed > maxTokens) {
    const what =
      cut.forcedIndex >= 0
        ? `the newest user message (${label(list[cut.forcedIndex].source)}, always kept) takes ${cut.forcedCost} tokens with its framing and attachments`
        : `no user message is left after the compaction${cut.minimalLeadCost > 0 ? ` (${cut.minimalLeadCost} for a leading user turn)` : ''}`;
    throw new DomainError(
      'CONTEXT_BUDGET_TOO_SMALL',
      `maxTokens is ${maxTokens}, but the smallest possible context needs ${needed} tokens: ${what}${options.fixedParts.length > 0 ? `, plus ${options.fixedParts.join(', ')}` : ''}. Raise maxTokens to at least ${needed}, or shorten the system prompt, turn context or message.`,
      { maxTokens, requiredTokens: needed },
    );
  }
  const stable = options.stable
    ? stablePrefixCut(list, cut, {
        capacity,
        lowerMark: Math.floor(maxTokens * (1 - options.stable.cacheSlack)) - options.stable.steadyFixedTokens,
        historyEnd: options.stable.historyEnd,
        costOf: options.costOf,
        leadCost: options.leadCost,
        reason: stablePrefixReason(maxTokens, options.stable.cacheSlack),
      })
    : null;
  if (stable) return { list: stable.list, removed: stable.removed, usedTokens: options.fixedTokens + stable.used };
  return { ...cut.result, usedTokens: options.fixedTokens + cut.used };
}
