/**
 * Step 2: apply the latest applicable compaction. Messages with index < uptoIndex are replaced by
 * the summary, which goes first (after the system prompt) as a system-kind block. The caller
 * resolves which compaction applies (fork inheritance); this step only applies it. A round cut by
 * uptoIndex (call summarized, result kept) is repaired by `repairToolPairs`, which runs next.
 */
import type { DomainCompaction } from '../types.js';
import { canonicalJson } from './hash.js';
import { escapeJsonForMarkup } from './turn-context.js';
import type { Removal } from './types.js';
import type { StepResult, WorkMessage } from './work.js';

export interface CompactionStepResult extends StepResult {
  /** The summary block's text, or null without a compaction. */
  summaryText: string | null;
}

/**
 * The text of the summary block: a short header, then the stored summary as it is, then, when the
 * compaction has structured context, one compact JSON section escaped as the turn context is
 * (keys sorted; <, >, & escaped, so no value can close the section):
 *
 *     <extracted_context>{"decisions":["use PGlite"],"files":["src/app.ts"]}</extracted_context>
 */
export function renderSummary(compaction: DomainCompaction): string {
  const n = compaction.uptoIndex;
  const range = n <= 1 ? 'message 0' : `messages 0-${n - 1}`;
  const text = `Summary of the earlier conversation (${range}):\n\n${compaction.summary}`;
  const extracted = compaction.extractedContext;
  if (extracted === null || extracted === undefined) return text;
  return `${text}\n\n<extracted_context>${escapeJsonForMarkup(canonicalJson(extracted))}</extracted_context>`;
}

/**
 * Why a message before the compaction's end is not in the context: one text whatever path decided
 * it (the pipeline, or the window rule for messages never loaded), with no raw database id in it.
 */
export function summarizedReason(compaction: Pick<DomainCompaction, 'uptoIndex'>): string {
  return `Covered by the compaction of messages [0, ${compaction.uptoIndex}).`;
}

export function applyCompaction(list: readonly WorkMessage[], compaction: DomainCompaction | null): CompactionStepResult {
  if (!compaction) return { list: [...list], removed: [], summaryText: null };
  const kept: WorkMessage[] = [];
  const removed: Removal[] = [];
  for (const w of list) {
    if (w.source.index < compaction.uptoIndex) {
      removed.push({
        message: w.source,
        decision: 'SUMMARIZED',
        reason: summarizedReason(compaction),
      });
    } else {
      kept.push(w);
    }
  }
  return { list: kept, removed, summaryText: renderSummary(compaction) };
}
