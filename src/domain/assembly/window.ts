/**
 * The window-paging rule: which of a session's messages are worth loading for an assembly with a
 * token budget, decided from their light rows (role, state, stored counts) read newest first.
 *
 * The pipeline keeps messages newest first as a contiguous run, so a message cannot be kept once
 * even a lower bound of the cost of it and everything after it exceeds the budget. The lower bound
 * of a message: its stored content tokens plus one framing token (every format but GEMINI frames a
 * message with at least MESSAGE_FRAMING_TOKENS, see formats.ts; GEMINI counts content only, so none); a tool result counted at most as its
 * elision stub (work.ts's `toolResultStubTokens`: it may be elided); a generating message (dropped)
 * as nothing; a tool round counted only once its assistant message is read and every call of it is
 * answered by the finished results right after it, and as nothing otherwise (the pipeline drops an
 * incomplete round for tool pairing, so counting it would stop the window early and drop older
 * messages the budget has room for). Messages are taken until that point plus a margin and the newest user message (always
 * kept). Everything before is decided without being loaded: summarized when the compaction covers
 * it, dropped for the budget otherwise, with the same reasons the pipeline gives. History
 * transforms change the rows before they reach the rule (services/assembly.ts): a hidden message
 * counts as nothing, as a generating one does, and a redacted one as its replacement.
 */
import type { MessageRole, TokenEncoding } from '../types.js';
import { summarizedReason } from './compaction.js';
import { budgetReason } from './fit-budget.js';
import { MESSAGE_FRAMING_TOKENS } from './formats.js';
import type { ContextDecision, ContextFormat } from './types.js';
import { toolResultStubTokens } from './work.js';
import { hiddenReason, type Hidden } from '../transforms.js';

/**
 * How the window is read, newest first: `first` messages while the compaction is read, then pages of
 * rows sized from the cost seen so far, within [`min`, `max`], until `margin` messages past the point
 * where nothing older can fit (so the cut is decided by the pipeline, not here).
 */
export interface WindowPaging {
  first: number;
  min: number;
  max: number;
  margin: number;
}
export const DEFAULT_WINDOW_PAGING: WindowPaging = { first: 256, min: 64, max: 2_048, margin: 16 };

/** What the rule looks at of a message. */
export interface WindowRow {
  position: number;
  role: MessageRole;
  generating: boolean;
  /** Call ids of an assistant message (absent: none). */
  toolCallIds?: readonly string[];
  toolResultIds: readonly string[];
  tokensO200k: number | null;
  tokensCl100k: number | null;
}

/** Framing counted per message in the lower bound: at most what the format adds (GEMINI adds none: content only). */
export const framingLowerBound = (format: ContextFormat) => (format === 'GEMINI' ? 0 : Math.min(1, MESSAGE_FRAMING_TOKENS));

/**
 * The state of one window read: feed it rows newest first (`take`) until `done`; it says how large
 * the next page should be and what the cost per message was.
 */
export class WindowPlan {
  private spent = 0;
  private counted = 0;
  private margin: number | null = null;
  private userSeen = false;
  private readonly stub: number;
  /** The run of tool-result rows read since the last other row (newer than it): their stub bounds and result ids. */
  private run: Array<{ cost: number; ids: readonly string[] }> = [];

  constructor(
    private readonly budget: number,
    private readonly encoding: Exclude<TokenEncoding, 'CHARS_DIV_4'>,
    private readonly paging: WindowPaging = DEFAULT_WINDOW_PAGING,
    private readonly framing = 1,
  ) {
    this.stub = toolResultStubTokens(0, encoding);
  }

  /** Past the budget by the margin, with the newest user message seen: nothing older is needed. */
  get done(): boolean {
    return this.margin !== null && this.margin <= 0 && this.userSeen;
  }

  /**
   * Counts the next row (newest first). False when the row has no stored count: then nothing bounds
   * the window and every message after the compaction is to be loaded.
   */
  take(row: WindowRow): boolean {
    if (row.role === 'USER' && !row.generating) this.userSeen = true;
    if (this.margin !== null) {
      this.margin--;
      return true;
    }
    const tokens = this.encoding === 'CL100K_BASE' ? row.tokensCl100k : row.tokensO200k;
    if (tokens === null && !row.generating) return false;
    this.counted++;
    if (row.role === 'TOOL') {
      // Counted with its round's assistant message, if that round is complete.
      this.run.push(
        row.generating || tokens === null
          ? { cost: 0, ids: [] }
          : { cost: Math.min(tokens, row.toolResultIds.length * this.stub), ids: row.toolResultIds },
      );
      return true;
    }
    const run = this.run;
    this.run = [];
    if (row.generating || tokens === null) return true;
    const calls = row.role === 'ASSISTANT' ? (row.toolCallIds ?? []) : [];
    if (calls.length > 0) {
      const answered = new Set<string>();
      for (const r of run) for (const id of r.ids) answered.add(id);
      if (!calls.every((id) => answered.has(id))) return true;
      const own = new Set(calls);
      for (const r of run) if (r.ids.length > 0 && r.ids.every((id) => own.has(id))) this.spent += r.cost;
    }
    this.spent += tokens + this.framing;
    if (this.spent > this.budget) this.margin = this.paging.margin;
    return true;
  }

  /** How many rows the next page should read: past the budget, only the margin and the newest user message are still wanted. */
  nextPageSize(): number {
    const { paging } = this;
    if (this.counted === 0 || this.margin !== null) return paging.first;
    const needed = Math.ceil(((this.budget - this.spent) / Math.max(1, this.spent)) * this.counted * 1.25) + paging.margin;
    return Math.min(paging.max, Math.max(paging.min, needed));
  }

  /** The average lower-bound cost of the messages counted (null when none were). */
  get costPerRow(): number | null {
    return this.counted > 0 ? this.spent / this.counted : null;
  }
}

/** The first page of light rows of a session assembled before: what the budget holds at the cost per message seen last time, plus the margin. */
export function firstPageSize(costPerRow: number | null, budget: number, paging: WindowPaging = DEFAULT_WINDOW_PAGING): number {
  if (costPerRow === null) return paging.first;
  const size = Math.ceil((budget / Math.max(1, costPerRow)) * 1.1) + 2 * paging.margin;
  return Math.min(paging.max, Math.max(paging.min, size));
}

/**
 * The window without the tool results at its edge (oldest first in, oldest first out): they answer
 * calls before the window, which are dropped for the budget, so they are too, for the same reason,
 * instead of reaching the pipeline as orphans (repairToolPairs would give them another reason).
 * Rows at the compaction's end (`upto`) stay: the summary stands before them.
 */
export function trimWindowEdge<R extends Pick<WindowRow, 'role' | 'position'>>(window: R[], upto: number): R[] {
  const head = window.findIndex((row) => row.role !== 'TOOL');
  return head > 0 && window[0].position > upto ? window.slice(head) : window;
}

/** Where the loaded window starts, and what decides the messages before it. */
export interface EarlierWindow {
  /** First position loaded: every message before it was decided without being loaded. */
  lo: number;
  /** The applicable compaction (messages before `uptoIndex` are summarized), or null. */
  compaction: { id: string; uptoIndex: number } | null;
  /** The budget (null: none, and then every message before the window is summarized). */
  maxTokens: number | null;
  /** The leading system message (position 0) was loaded apart and decided by the pipeline. */
  pinnedFirst?: boolean;
  /** Hidden messages by id (history transforms): decided HIDDEN unless summarized, as the pipeline does. */
  hidden?: ReadonlyMap<string, Hidden>;
}

/**
 * Decisions of the messages before the window, in index order: summarized (those the compaction
 * covers) or dropped for the budget, with the pipeline's reasons.
 */
export function earlierDecisions(messages: readonly { id: string; position: number }[], earlier: EarlierWindow): ContextDecision[] {
  const upto = earlier.compaction?.uptoIndex ?? 0;
  const summarized = earlier.compaction ? summarizedReason(earlier.compaction) : '';
  const dropped = earlier.maxTokens === null ? '' : budgetReason(earlier.maxTokens);
  const rest = earlier.pinnedFirst ? messages.filter((m) => m.position !== 0) : messages;
  return rest.map((m) => {
    if (m.position < upto) return { messageId: m.id, index: m.position, decision: 'SUMMARIZED', reason: summarized };
    const hidden = earlier.hidden?.get(m.id);
    if (hidden) return { messageId: m.id, index: m.position, decision: 'HIDDEN', reason: hiddenReason(hidden) };
    return { messageId: m.id, index: m.position, decision: 'DROPPED_BUDGET', reason: dropped };
  });
}
