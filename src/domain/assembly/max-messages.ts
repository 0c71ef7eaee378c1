/**
 * Step 4: keep at most `maxMessages` source messages, the newest. The newest USER message is
 * always kept (it is what the model answers); the system prompt, summary and turn-context blocks
 * do not count. Tool rounds are kept or dropped whole: the cut stops at the first unit (newest
 * first) that does not fit, so the kept messages are the newest user message plus the longest
 * newest run that fits, and never a call without its results or a result without its call.
 */
import type { Removal } from './types.js';
import { label, newestUserIndex, type StepResult, type WorkMessage } from './work.js';

export function capMaxMessages(list: readonly WorkMessage[], maxMessages: number | null): StepResult {
  if (maxMessages === null) return { list: [...list], removed: [] };
  const olderReason = `Older than the newest ${maxMessages} message(s) kept by maxMessages.`;
  return keepNewestUnits(list, {
    capacity: maxMessages,
    costOf: () => 1,
    dropped: removalFor(`Within maxMessages (${maxMessages}) on its own`, 'DROPPED_MAX_MESSAGES', olderReason),
  }).result;
}

/**
 * The removal of a message a cut leaves out: for the limit itself (`decision`, `reason`), or, when
 * the message would fit on its own (`fitsAlone` says under which limit), because its tool round does not.
 */
export function removalFor(
  fitsAlone: string,
  decision: 'DROPPED_MAX_MESSAGES' | 'DROPPED_BUDGET',
  reason: string,
): KeepNewestOptions['dropped'] {
  return (w, wouldFitAlone, boundary) =>
    wouldFitAlone
      ? {
          message: w.source,
          decision: 'DROPPED_TOOL_PAIR',
          reason: `${fitsAlone}, but its tool round (${label(boundary.source)}) does not fit: a call and its results are kept or dropped together.`,
        }
      : { message: w.source, decision, reason };
}

export interface KeepNewestOptions {
  /** Capacity left for source messages (maxMessages, or maxTokens minus the fixed blocks). */
  capacity: number;
  /** Cost of a message; called first for the forced newest USER message, then newest first, only for messages the cut looks at. */
  costOf: (w: WorkMessage) => number;
  /**
   * The removal for a dropped message. `wouldFitAlone` is true for a message of the first unit
   * that did not fit that would have fitted without the rest of its round; `boundary` is that
   * unit's first message.
   */
  dropped: (w: WorkMessage, wouldFitAlone: boolean, boundary: WorkMessage) => Removal;
  /**
   * Extra cost depending on the first non-SYSTEM message kept (null: none), e.g. the leading user
   * turn ANTHROPIC_MESSAGES needs when the kept conversation would start with an assistant turn.
   */
  leadCost?: (first: WorkMessage | null) => number;
}

export interface KeepNewestResult {
  result: StepResult;
  /** Cost of the kept messages (lead cost included). */
  used: number;
  /** Cost of the forced newest USER message (0 without one). */
  forcedCost: number;
  /** Lead cost of the smallest possible result (the forced message alone, or nothing). */
  minimalLeadCost: number;
  forcedIndex: number;
  /**
   * Where the kept run starts: every message from it on is kept (0 when nothing was cut). The
   * forced message may be older than it, and is kept apart.
   */
  runStart: number;
}

/**
 * The cut common to `capMaxMessages` and `fitTokenBudget`: the newest USER message first (the
 * caller checks that it fits), then units newest first until one does not fit.
 */
export function keepNewestUnits(list: readonly WorkMessage[], options: KeepNewestOptions): KeepNewestResult {
  const leadCost = options.leadCost ?? (() => 0);
  const forcedIndex = newestUserIndex(list);
  const forcedCost = forcedIndex >= 0 ? options.costOf(list[forcedIndex]) : 0;
  let used = forcedCost;
  // The first non-SYSTEM message kept so far (the oldest), for the lead cost.
  let first: WorkMessage | null = forcedIndex >= 0 ? list[forcedIndex] : null;
  const minimalLeadCost = leadCost(first);
  let lead = minimalLeadCost;
  const keep = new Uint8Array(list.length);
  if (forcedIndex >= 0) keep[forcedIndex] = 1;
  const removed: Removal[] = [];
  // Units newest first, found on the fly (the list is valid: a run of TOOL messages belongs to the
  // assistant message right before it), so a long history costs no unit array.
  let end = list.length;
  while (end > 0) {
    let start = end - 1;
    while (start > 0 && list[start].shape.role === 'TOOL') start--;
    if (start === forcedIndex) {
      end = start;
      continue;
    }
    let cost = 0;
    for (let i = start; i < end; i++) cost += options.costOf(list[i]);
    let nextFirst = first;
    if (forcedIndex < 0 || start < forcedIndex) {
      for (let i = start; i < end; i++) {
        if (list[i].shape.role !== 'SYSTEM') {
          nextFirst = list[i];
          break;
        }
      }
    }
    const nextLead = nextFirst === first ? lead : leadCost(nextFirst);
    if (used + cost + nextLead <= options.capacity) {
      used += cost;
      first = nextFirst;
      lead = nextLead;
      for (let i = start; i < end; i++) keep[i] = 1;
      end = start;
      continue;
    }
    // Only the lead cost is in the way (the unit would open the context with an assistant turn):
    // the units before it may open it with a user turn, and then fit with it.
    if (nextLead > 0 && used + cost <= options.capacity) {
      const run = openingRun(list, start, forcedIndex, options.costOf, leadCost, options.capacity - used - cost);
      if (run) {
        used += cost + run.cost;
        first = run.first;
        lead = run.lead;
        for (let i = run.start; i < end; i++) keep[i] = 1;
        end = run.start;
        continue;
      }
    }
    // The boundary unit: newest members that would have fitted on their own are tool-pair drops.
    const boundary = list[start];
    let partial = used + lead;
    let fits = end - start > 1;
    for (let i = end - 1; i >= start; i--) {
      if (fits) {
        partial += options.costOf(list[i]);
        fits = partial <= options.capacity && i > start;
      }
      removed.push(options.dropped(list[i], fits, boundary));
    }
    // Everything older goes too (the newest user message excepted).
    for (let i = start - 1; i >= 0; i--) if (i !== forcedIndex) removed.push(options.dropped(list[i], false, list[i]));
    break;
  }
  const kept: WorkMessage[] = [];
  for (let i = 0; i < list.length; i++) if (keep[i]) kept.push(list[i]);
  removed.reverse();
  return { result: { list: kept, removed }, used: used + lead, forcedCost, minimalLeadCost, forcedIndex, runStart: end };
}

/** Units a look-ahead for an opening user turn may take (each is one message or one tool round). */
const OPENING_LOOKAHEAD_UNITS = 8;

/**
 * The shortest run of whole units right before `end` (the newest user message, already kept, is
 * not counted again) that fits `room` together with the lead cost of its first non-SYSTEM message,
 * looking back at most OPENING_LOOKAHEAD_UNITS units; null when there is none.
 */
function openingRun(
  list: readonly WorkMessage[],
  end: number,
  forcedIndex: number,
  costOf: (w: WorkMessage) => number,
  leadCost: (first: WorkMessage | null) => number,
  room: number,
): { start: number; cost: number; first: WorkMessage; lead: number } | null {
  let start = end;
  let cost = 0;
  let first: WorkMessage | null = null;
  for (let units = 0; units < OPENING_LOOKAHEAD_UNITS && start > 0; units++) {
    const unitEnd = start;
    start--;
    while (start > 0 && list[start].shape.role === 'TOOL') start--;
    for (let i = start; i < unitEnd; i++) if (i !== forcedIndex) cost += costOf(list[i]);
    if (cost > room) return null;
    for (let i = start; i < unitEnd; i++) {
      if (list[i].shape.role !== 'SYSTEM') {
        first = list[i];
        break;
      }
    }
    if (first === null) continue;
    const lead = leadCost(first);
    if (cost + lead <= room) return { start, cost, first, lead };
  }
  return null;
}
