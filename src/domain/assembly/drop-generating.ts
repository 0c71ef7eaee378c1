/**
 * Step 1: messages still being generated are not part of any context (half a reply, a tool result
 * still streaming). Removing one can orphan its tool pair; `repairToolPairs` runs next.
 */
import type { Removal } from './types.js';
import type { StepResult, WorkMessage } from './work.js';

export function dropGenerating(list: readonly WorkMessage[]): StepResult {
  const kept: WorkMessage[] = [];
  const removed: Removal[] = [];
  for (const w of list) {
    if (w.source.generating) {
      removed.push({
        message: w.source,
        decision: 'DROPPED_GENERATING',
        reason: 'Still being generated: an unfinished message is never sent to a model.',
      });
    } else {
      kept.push(w);
    }
  }
  return { list: kept, removed };
}
