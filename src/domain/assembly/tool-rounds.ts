/**
 * Tool rounds and the tool-pair invariant.
 *
 * A round is an ASSISTANT message with toolCall parts followed directly by the TOOL messages that
 * hold its results (one or more toolResult parts each; parallel calls may be answered by one TOOL
 * message or several). Providers reject a request where a result does not directly follow its
 * call, where a call has no result, or where the conversation starts with a result, so:
 *
 * - `findToolInvariantViolations` / `assertToolInvariants` check a list after every step;
 * - `repairToolPairs` drops what cannot be sent (orphan results, rounds with a missing result);
 * - `buildUnits` groups a valid list into units that later steps keep or drop as a whole.
 */
import { isRoundHead, toolShapeOf, type ToolCheckMessage, type ToolShape } from './tool-shape.js';
import type { Removal } from './types.js';
import { label, type StepResult, type WorkMessage } from './work.js';

export { isRoundHead, toolShapeOf, type ToolCheckMessage, type ToolShape };

/** How the helpers below see a list item; the working list passes the shapes it computed once. */
export type ShapeView<T> = (item: T) => ToolShape;

const shapeOfMessage = toolShapeOf as ShapeView<unknown>;

/**
 * Every way `list` breaks the tool-pair invariant, as sentences (empty = valid):
 * - the list does not start with a TOOL message;
 * - every TOOL message follows, within a run of TOOL messages, an ASSISTANT message with tool calls,
 *   and each of its results answers one of that message's calls, once;
 * - every call of an ASSISTANT message is answered in the TOOL messages directly after it.
 */
export function findToolInvariantViolations<T = ToolCheckMessage>(list: readonly T[], view: ShapeView<T> = shapeOfMessage): string[] {
  const violations: string[] = [];
  if (list.length > 0 && view(list[0]).role === 'TOOL') violations.push('the list starts with a tool result (position 0)');
  let ownerPos = -1;
  let ownerCalls: readonly string[] = [];
  let answered: boolean[] = [];
  const closeRound = () => {
    for (let k = 0; k < ownerCalls.length; k++) {
      if (!answered[k]) violations.push(`tool call ${ownerCalls[k]} at position ${ownerPos} has no result directly after it`);
    }
    ownerPos = -1;
  };
  for (let i = 0; i < list.length; i++) {
    const m = view(list[i]);
    if (m.role === 'TOOL') {
      const results = m.results;
      if (results.length === 0) violations.push(`tool message at position ${i} holds no tool result`);
      if (ownerPos < 0) {
        if (i > 0) violations.push(`tool message at position ${i} does not follow an assistant message with tool calls`);
        continue;
      }
      for (let k = 0; k < results.length; k++) {
        const id = results[k];
        const at = ownerCalls.indexOf(id);
        if (at < 0) {
          violations.push(`tool result ${id} at position ${i} answers no call of the assistant message at position ${ownerPos}`);
        } else if (answered[at]) {
          violations.push(`tool result ${id} at position ${i} answers call ${id} a second time`);
        } else {
          answered[at] = true;
        }
      }
      continue;
    }
    if (ownerPos >= 0) closeRound();
    if (isRoundHead(m)) {
      ownerPos = i;
      ownerCalls = m.calls;
      answered = new Array<boolean>(m.calls.length).fill(false);
    }
  }
  if (ownerPos >= 0) closeRound();
  return violations;
}

/** Throws (an internal error: a bug, not bad input) when `list` breaks the invariant after `step`. */
export function assertToolInvariants<T = ToolCheckMessage>(list: readonly T[], step: string, view?: ShapeView<T>): void {
  const violations = findToolInvariantViolations(list, view);
  if (violations.length > 0) {
    throw new Error(`Context assembly broke the tool-call invariant after step "${step}": ${violations.join('; ')}`);
  }
}

/** A contiguous run of a valid list kept or dropped as a whole: `list.slice(start, end)`. */
export interface Unit {
  start: number;
  end: number;
}

/**
 * Groups a list that satisfies the invariant into units: a round (assistant message with calls and
 * the TOOL messages after it) is one unit, every other message is a unit of its own.
 */
export function buildUnits<T = ToolCheckMessage>(list: readonly T[], view: ShapeView<T> = shapeOfMessage): Unit[] {
  const units: Unit[] = [];
  let i = 0;
  while (i < list.length) {
    let end = i + 1;
    if (isRoundHead(view(list[i]))) while (end < list.length && view(list[end]).role === 'TOOL') end++;
    units.push({ start: i, end });
    i = end;
  }
  return units;
}

/** Explains, for reasons, why a call or result is absent (e.g. "it was summarized by the compaction"). */
export interface ToolPairExplainer {
  missingCall(callId: string): string;
  missingResult(callId: string): string;
}

const plainExplainer: ToolPairExplainer = {
  missingCall: () => 'no message before it in the context made that call',
  missingResult: () => 'no result for it directly follows the call in the context',
};

/**
 * Drops what cannot be sent without breaking a tool pair, keeping everything else in order:
 * - a TOOL message that does not directly follow (within a run of TOOL messages) the assistant
 *   message that made all of its calls (an orphan: its call was summarized, dropped or is elsewhere);
 * - a TOOL message that answers a call already answered, or holds no result at all;
 * - a round whose assistant message has a call without a result (the call and its partial results
 *   go together: a provider rejects a call with no result, parallel calls included).
 * Every removal is DROPPED_TOOL_PAIR with a reason.
 */
export function repairToolPairs(list: readonly WorkMessage[], explain: ToolPairExplainer = plainExplainer): StepResult {
  const out: WorkMessage[] = [];
  const removed: Removal[] = [];
  const drop = (w: WorkMessage, reason: string) => removed.push({ message: w.source, decision: 'DROPPED_TOOL_PAIR', reason });
  const resultList = (ids: readonly string[]) => ids.join(', ');

  let i = 0;
  while (i < list.length) {
    const w = list[i];
    const m = w.source;
    if (w.shape.role === 'TOOL') {
      const ids = w.shape.results;
      drop(
        w,
        ids.length === 0
          ? 'A tool message without a tool result cannot be sent.'
          : `Orphan tool result (${resultList(ids)}): ${explain.missingCall(ids[0])}; a provider rejects a result without its call.`,
      );
      i++;
      continue;
    }
    if (!isRoundHead(w.shape)) {
      out.push(w);
      i++;
      continue;
    }
    const calls = new Set(w.shape.calls);
    const answered = new Set<string>();
    const attached: WorkMessage[] = [];
    let j = i + 1;
    for (; j < list.length && list[j].shape.role === 'TOOL'; j++) {
      const t = list[j];
      const ids = t.shape.results;
      const foreign = ids.find((id) => !calls.has(id));
      const repeated = ids.find((id, k) => answered.has(id) || ids.indexOf(id) !== k);
      if (ids.length === 0) {
        drop(t, 'A tool message without a tool result cannot be sent.');
      } else if (foreign !== undefined) {
        drop(
          t,
          `Orphan tool result (${foreign}): ${label(m)} directly before it did not make that call (${explain.missingCall(foreign)}).`,
        );
      } else if (repeated !== undefined) {
        drop(t, `Duplicate tool result for call ${repeated}: the call was already answered.`);
      } else {
        for (const id of ids) answered.add(id);
        attached.push(t);
      }
    }
    const missing = [...calls].filter((id) => !answered.has(id));
    if (missing.length === 0) {
      out.push(w, ...attached);
    } else {
      const why = explain.missingResult(missing[0]);
      drop(w, `Tool call ${resultList(missing)} has no result (${why}); a call is only sent with all of its results.`);
      for (const t of attached) {
        drop(t, `Its round (${label(m)}) is incomplete: call ${resultList(missing)} has no result (${why}).`);
      }
    }
    i = j;
  }
  return { list: out, removed };
}
