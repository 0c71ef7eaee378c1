/**
 * Step 3: tool results older than the last `keepToolCallRounds` rounds are replaced by a short stub
 * (`[tool result elided: 1234 characters]`); their calls stay, so every call still has a result
 * and the pair is intact. Rounds are counted over the whole list after compaction. A TOOL message
 * holding a failed result (`isError`) is never stubbed.
 * The stub text and its tokens are materialized lazily (`workParts`, `workContentTokens`).
 */
import { buildUnits, isRoundHead } from './tool-rounds.js';
import { shapeOf, type WorkMessage } from './work.js';

export interface ElideStepResult {
  list: WorkMessage[];
  /** Ids of the TOOL messages whose results were stubbed. */
  elidedMessageIds: Set<string>;
  /** Rounds found in the list. */
  roundCount: number;
}

export function elideOldToolResults(list: readonly WorkMessage[], keepToolCallRounds: number): ElideStepResult {
  const units = buildUnits(list, shapeOf);
  const rounds = units.filter((u) => isRoundHead(list[u.start].shape));
  const elideCount = Math.max(0, rounds.length - keepToolCallRounds);
  const out = [...list];
  const elidedMessageIds = new Set<string>();
  for (let r = 0; r < elideCount; r++) {
    const unit = rounds[r];
    for (let i = unit.start + 1; i < unit.end; i++) {
      const w = out[i];
      // A failed result is the model's record of what went wrong: never stubbed (nor the results
      // sent beside it in the same message, which keeps elision per message).
      if (w.source.role !== 'TOOL' || w.elided || w.source.parts.some((p) => p.type === 'toolResult' && p.isError)) continue;
      out[i] = { source: w.source, elided: true, shape: w.shape };
      elidedMessageIds.add(w.source.id);
    }
  }
  return { list: out, elidedMessageIds, roundCount: rounds.length };
}
