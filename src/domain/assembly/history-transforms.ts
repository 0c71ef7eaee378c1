/**
 * Step 2b: the session's history transforms (domain/transforms.ts), applied after the compaction so
 * that a message the summary covers stays summarized:
 *   - a hidden message is left out (decision HIDDEN, with the reason given when it was hidden);
 *     `repairToolPairs`, which runs next, drops the partner of a hidden tool call or result;
 *   - tool results of messages before the strip index become stubs, as elision makes them, but
 *     whatever keepToolCallRounds says (failed results too).
 * Redactions are applied before the pipeline starts (`projectMessage`): from the first step on, a
 * redacted message is its replacement.
 */
import { hiddenReason, strippedReason, type HistoryTransforms } from '../transforms.js';
import type { Removal } from './types.js';
import type { StepResult, WorkMessage } from './work.js';

export function hideMessages(list: readonly WorkMessage[], transforms: HistoryTransforms): StepResult {
  if (transforms.hidden.size === 0) return { list: [...list], removed: [] };
  const kept: WorkMessage[] = [];
  const removed: Removal[] = [];
  for (const w of list) {
    const hidden = transforms.hidden.get(w.source.id);
    if (hidden) removed.push({ message: w.source, decision: 'HIDDEN', reason: hiddenReason(hidden) });
    else kept.push(w);
  }
  return { list: kept, removed };
}

export function stripToolOutputs(list: readonly WorkMessage[], stripUpto: number): WorkMessage[] {
  if (stripUpto <= 0) return [...list];
  const reason = strippedReason(stripUpto);
  return list.map((w) =>
    w.source.index < stripUpto && !w.elided && w.source.parts.some((p) => p.type === 'toolResult')
      ? { source: w.source, elided: true, shape: w.shape, elidedReason: reason }
      : w,
  );
}
