/**
 * runAssembly: the exact, explainable context for the next model call, as a pure function over
 * plain data (no I/O; the caller loads messages, the applicable compaction and attachments).
 *
 * Pipeline (CONTRACT.md order), with the tool-pair invariant checked after every step:
 *   1. dropGenerating          (+ repairToolPairs: a dropped call or result orphans its partner)
 *   2. applyCompaction         (+ repairToolPairs: uptoIndex may cut a round)
 *   2b. history transforms     (hidden messages out, + repairToolPairs; stripped tool results ->
 *                               stubs; redacted messages were projected before step 1)
 *   3. elideOldToolResults     (results older than the last keepToolCallRounds rounds -> stubs)
 *   4. capMaxMessages          (newest; the newest user message always stays; rounds whole)
 *   5. fitTokenBudget          (newest; fixed blocks + newest user message first; rounds whole;
 *                               STABLE_PREFIX then starts where the history fixes, stable-prefix.ts)
 *   6. resolveAttachments      (sized during step 5 so the budget counts them; INLINE blocks or
 *                               REFERENCE blocks, attachmentMode; images and PDFs as media parts
 *                               where the format can send them, media-rules.ts)
 *   7. turn context block right before the last user message; system prompt and summary first
 *      (the session's leading system message between them when the compaction covers it)
 *      (ANTHROPIC_MESSAGES and GEMINI: a placeholder user turn first when the conversation would
 *      start with an assistant turn; it is reserved in step 5 only when the kept messages need it;
 *      ANTHROPIC_MESSAGES: cache_control marks where a prompt cache pays, cache-breakpoints.ts)
 * then the provider rules (provider-rules.ts: tool names are mapped before step 5, so their cost
 * is the sent name's; call ids after step 7), the provider payload, the token total and the hash,
 * and the payload's prefix with what of it the previous assembly sent (payload-prefix.ts).
 */
import { badInput } from '../errors.js';
import { countTokens, type KnownTokenCounts } from '../tokens.js';
import type { MessageRole } from '../types.js';
import { attachmentToolDefinitions, attachmentToolTokens } from './attachment-tool.js';
import { createAttachmentResolver, resolveAttachments } from './attachments.js';
import { cacheBreakpoints } from './cache-breakpoints.js';
import { applyCompaction } from './compaction.js';
import { createToolPairExplainer, DecisionLog } from './decisions.js';
import { dropGenerating } from './drop-generating.js';
import { elideOldToolResults } from './elide.js';
import { fitTokenBudget } from './fit-budget.js';
import { buildPayload, framingTokens, framingTokensFor, LEADING_USER_TEXT, replyPrimingTokens } from './formats.js';
import { contextHash } from './hash.js';
import { capMaxMessages } from './max-messages.js';
import { payloadPrefixOf, reusedPrefixTokens } from './payload-prefix.js';
import { applyProviderRules, mapToolNames, sendsAnthropicContent, startsWithUserTurn } from './provider-rules.js';
import { assertToolInvariants, repairToolPairs } from './tool-rounds.js';
import { renderTurnContext } from './turn-context.js';
import {
  DEFAULT_CACHE_SLACK,
  DEFAULT_CACHE_STRATEGY,
  type AssembleContextInput,
  type AssembledContext,
  type AssembledMessage,
  type AssembledMessageKind,
  type ContextDecisionKind,
  type ContextFormat,
} from './types.js';
import { validateAssembleOptions } from './validate.js';
import { NO_TRANSFORMS, projectMessage } from '../transforms.js';
import { hideMessages, stripToolOutputs } from './history-transforms.js';
import { newestUserIndex, shapeOf, toWork, workContentTokens, workProviderTokens, type StepResult, type WorkMessage } from './work.js';

function syntheticBlock(
  kind: AssembledMessageKind,
  role: MessageRole,
  text: string,
  format: ContextFormat,
  encoding: AssembleContextInput['options']['encoding'],
  known?: KnownTokenCounts,
): AssembledMessage {
  const parts = [{ type: 'text' as const, text }];
  return {
    role,
    kind,
    parts,
    sourceMessageId: null,
    sourceIndex: null,
    tokenCount: countTokens(text, encoding, known) + framingTokens(format, role, parts),
  };
}

const CUT_DECISIONS = new Set<ContextDecisionKind>(['DROPPED_MAX_MESSAGES', 'DROPPED_BUDGET']);

export function runAssembly(input: AssembleContextInput): AssembledContext {
  const options = validateAssembleOptions(input.options);
  const { encoding, format } = options;
  const turnContextText = options.turnContext === null ? null : renderTurnContext(options.turnContext);

  const log = new DecisionLog(input.messages);
  const explainer = createToolPairExplainer(input.messages, log);
  const apply = (step: StepResult, name: string): WorkMessage[] => {
    log.record(step.removed);
    assertToolInvariants(step.list, name, shapeOf);
    return step.list;
  };
  const applyWithRepair = (step: StepResult, name: string): WorkMessage[] => {
    log.record(step.removed);
    return apply(repairToolPairs(step.list, explainer), name);
  };

  // 1. messages still being generated
  const transforms = input.transforms ?? NO_TRANSFORMS;
  let list = applyWithRepair(dropGenerating(input.messages.map((m) => toWork(projectMessage(m, transforms)))), 'dropGenerating');
  // With a compaction in force the summary stands for the user messages it covers (a fork's
  // inherited compaction too), so only a session with neither has nothing to answer.
  if (input.compaction === null && !list.some((w) => w.source.role === 'USER')) {
    throw badInput(
      'The session has no finished user message, so there is nothing to answer: append a USER message before assembling context.',
    );
  }

  // 1b. hidden messages (history transforms), before the leading system message is pinned: a
  // hidden system message is not sent either.
  list = applyWithRepair(hideMessages(list, transforms), 'hideMessages');
  if (input.compaction === null && !list.some((w) => w.source.role === 'USER')) {
    throw badInput(
      'Every finished user message of the session is hidden, so there is nothing to answer: unhide one or append a USER message.',
    );
  }

  // The session's leading system message: outside maxMessages, first in the budget, and kept
  // ahead of the summary when a compaction covers it (as Chatbox re-inserts it): the summary
  // stands for the conversation, not for the instructions it ran under.
  const pinned =
    options.keepSystemMessage !== false && list.length > 0 && list[0].source.index === 0 && list[0].source.role === 'SYSTEM'
      ? list[0]
      : null;
  if (pinned) list = list.slice(1);

  // 2. compaction
  const compacted = applyCompaction(list, input.compaction);
  list = input.compaction ? applyWithRepair(compacted, 'applyCompaction') : apply(compacted, 'applyCompaction');
  const pinnedBeforeSummary = pinned !== null && input.compaction !== null && pinned.source.index < input.compaction.uptoIndex;

  // 2b. tool outputs stripped (history transforms): stubs, as elision makes, but fixed
  list = apply({ list: stripToolOutputs(list, transforms.stripUpto), removed: [] }, 'stripToolOutputs');

  // 3. old tool results
  const elided = elideOldToolResults(list, options.keepToolCallRounds);
  list = apply({ list: elided.list, removed: [] }, 'elideOldToolResults');

  // 4. maxMessages
  const capped = capMaxMessages(list, options.maxMessages);
  list = apply(capped, 'capMaxMessages');

  // 5. maxTokens: fixed blocks first, then messages with their framing and attachments
  const systemBlock =
    options.system !== null && options.system.length > 0
      ? syntheticBlock('system', 'SYSTEM', options.system, format, encoding, input.knownTokens)
      : null;
  const summaryBlock =
    compacted.summaryText !== null ? syntheticBlock('summary', 'SYSTEM', compacted.summaryText, format, encoding, input.knownTokens) : null;
  const turnContextBlock =
    turnContextText !== null ? syntheticBlock('turnContext', 'USER', turnContextText, format, encoding, input.knownTokens) : null;
  const priming = replyPrimingTokens(format);
  const fixedParts = priming > 0 ? [`${priming} of reply priming`] : [];
  let fixedTokens = priming;
  // Tool definitions are sent with the messages, so they are a fixed block of the budget too.
  const toolTokenCount = options.includeAttachmentTool ? attachmentToolTokens(format, encoding) : 0;
  if (toolTokenCount > 0) {
    fixedTokens += toolTokenCount;
    fixedParts.push(`${toolTokenCount} for the read_attachment tool definition`);
  }
  for (const [name, block] of [
    ['system prompt', systemBlock],
    ['summary', summaryBlock],
    ['turn context', turnContextBlock],
  ] as const) {
    if (block) {
      fixedTokens += block.tokenCount;
      fixedParts.push(`${block.tokenCount} for the ${name}`);
    }
  }
  const resolver = createAttachmentResolver(input.attachments, {
    attachmentMaxChars: options.attachmentMaxChars,
    contextAttachmentMaxChars: options.contextAttachmentMaxChars,
    encoding,
    mode: options.attachmentMode ?? 'INLINE',
    referenceId: input.attachmentReferenceId,
    format,
  });
  // ANTHROPIC_MESSAGES and GEMINI must start with a user turn. With a summary, the summary is that
  // turn when needed (same framing, already counted among the fixed blocks); otherwise a
  // placeholder goes first.
  const summaryLeads = startsWithUserTurn(format) && summaryBlock !== null;
  const leadBlock =
    startsWithUserTurn(format) && !summaryLeads ? syntheticBlock('system', 'USER', LEADING_USER_TEXT, format, encoding) : null;
  // What opens the payload is the first kept message that sends a block, or the turn-context block
  // where it stands (right before the newest user message): the placeholder is charged only when
  // that is not a user turn. The kept messages run without a gap from the oldest one to the end,
  // unless the oldest is the newest user message itself; past it, the rest is not known here, so
  // the placeholder is charged (the final list decides whether it is sent).
  const position = leadBlock ? new Map(list.map((w, i) => [w, i])) : null;
  const newestUserAt = newestUserIndex(list);
  const leadCost = leadBlock
    ? (first: WorkMessage | null) => {
        if (first === null) return turnContextBlock === null ? leadBlock.tokenCount : 0;
        const from = position!.get(first)!;
        for (let i = from; i < list.length; i++) {
          if (i === newestUserAt && turnContextBlock !== null) return 0;
          const w = list[i];
          if (w.shape.role !== 'SYSTEM' && sendsAnthropicContent(w.source.parts, format))
            return w.shape.role === 'USER' ? 0 : leadBlock.tokenCount;
          if (i === newestUserAt && from === newestUserAt) break;
        }
        return leadBlock.tokenCount;
      }
    : undefined;
  // Tool names the format refuses, over every message that may be kept: their cost is the sent name's.
  const names = mapToolNames(toolNamesOf(pinned ? [pinned, ...list] : list), format, encoding);
  const nameDelta = (w: WorkMessage) => {
    let delta = 0;
    for (const p of w.source.parts) if (p.type === 'toolCall') delta += names.delta.get(p.name) ?? 0;
    return delta;
  };
  // Media sent inside a tool result are no part of their own: their message frames one less.
  const costOf = (w: WorkMessage) => {
    const attachments = w.shape.attachments > 0 ? resolver.resolve(w) : null;
    return (
      workContentTokens(w, encoding) +
      (names.delta.size > 0 && w.shape.calls.length > 0 ? nameDelta(w) : 0) +
      (attachments ? attachments.tokens : 0) +
      workProviderTokens(w, format, encoding) +
      framingTokensFor(format, w.shape.role, w.shape.calls.length, w.shape.results.length, w.shape.others - (attachments?.inResults ?? 0))
    );
  };
  if (pinned) {
    const cost = costOf(pinned);
    fixedTokens += cost;
    fixedParts.push(`${cost} for the session's leading system message (keepSystemMessage)`);
  }
  const cacheStrategy = options.cacheStrategy ?? DEFAULT_CACHE_STRATEGY;
  const stable =
    cacheStrategy === 'STABLE_PREFIX' && input.messages.length > 0
      ? {
          cacheSlack: options.cacheSlack ?? DEFAULT_CACHE_SLACK,
          steadyFixedTokens: fixedTokens - (turnContextBlock?.tokenCount ?? 0),
          historyEnd: input.messages[input.messages.length - 1].index + 1,
        }
      : undefined;
  const fitted = fitTokenBudget(list, { maxTokens: options.maxTokens, fixedTokens, fixedParts, costOf, leadCost, stable });
  list = apply(fitted, 'fitTokenBudget');
  // Whether the first message moves at every call (a cache mark on a message would never be read):
  // it is NEWEST_FIRST's cut, or maxMessages' when the budget cut nothing more.
  const budgetCut = fitted.removed.some((r) => CUT_DECISIONS.has(r.decision));
  const startMoves = budgetCut ? stable === undefined : capped.removed.length > 0;
  if (pinned) list = [pinned, ...list];

  // 6. attachments
  // Attachments become text parts and stubs keep their call ids: the structure is unchanged, and
  // the final list (real parts, turn context included) is checked below.
  const resolved = resolveAttachments(list, resolver);

  // 7. assemble: system prompt, summary, messages, turn context before the newest user message
  const forced = newestUserIndex(list);
  let messages: AssembledMessage[] = [];
  if (systemBlock) messages.push(systemBlock);
  // A pinned system message the compaction covers goes where it stood: before the summary.
  const resolvedMessages = pinnedBeforeSummary ? resolved.messages.slice(1) : resolved.messages;
  const forcedAt = pinnedBeforeSummary ? forced - 1 : forced;
  const pushMessage = (r: (typeof resolved.messages)[number], i: number) => {
    const source = r.work.source;
    messages.push({
      role: source.role,
      kind: 'message',
      parts: r.parts,
      sourceMessageId: source.id,
      sourceIndex: source.index,
      tokenCount: costOf(r.work),
    });
    kept.set(source.id, {
      elided: r.work.elided,
      reason: r.work.elided
        ? (r.work.elidedReason ?? elidedReason)
        : i === forcedAt
          ? 'Kept: the newest user message is always kept.'
          : r.work === pinned
            ? pinnedBeforeSummary
              ? `Kept ahead of the summary: the session's leading system message is kept rather than summarized by the compaction of messages [0, ${input.compaction!.uptoIndex}) (keepSystemMessage).`
              : "Kept: the session's leading system message is kept outside maxMessages (keepSystemMessage)."
            : 'Kept.',
    });
  };
  const kept = new Map<string, { elided: boolean; reason: string }>();
  const elidedReason = `Kept with its tool result(s) replaced by a stub: older than the last ${options.keepToolCallRounds} tool round(s) (keepToolCallRounds).`;
  if (pinnedBeforeSummary) pushMessage(resolved.messages[0], -1);
  if (summaryBlock) messages.push(summaryBlock);
  resolvedMessages.forEach((r, i) => {
    if (i === forcedAt && turnContextBlock) messages.push(turnContextBlock);
    pushMessage(r, i);
  });
  if (forced < 0 && turnContextBlock) messages.push(turnContextBlock);
  // The first message the Anthropic payload sends (one without content blocks is left out of it).
  const firstTurnOf = (list: readonly AssembledMessage[]) =>
    list.findIndex((m) => m.role !== 'SYSTEM' && sendsAnthropicContent(m.parts, format));
  if (summaryLeads) {
    const firstTurn = firstTurnOf(messages);
    if (firstTurn < 0 || messages[firstTurn].role !== 'USER') {
      const at = messages.indexOf(summaryBlock!);
      messages[at] = { ...summaryBlock!, role: 'USER' };
    }
  }
  if (leadBlock) {
    const firstTurn = firstTurnOf(messages);
    if (firstTurn < 0) messages.push(leadBlock);
    else if (messages[firstTurn].role !== 'USER') messages.splice(firstTurn, 0, leadBlock);
  }
  assertToolInvariants(messages, 'resolveAttachments+turnContext');

  const mapped = applyProviderRules(messages, format, names);
  messages = mapped.messages;
  const toolDefinitions = options.includeAttachmentTool ? attachmentToolDefinitions(format) : undefined;
  const breakpoints =
    format === 'ANTHROPIC_MESSAGES' && input.messages.length > 0
      ? cacheBreakpoints(messages, {
          toolTokens: toolTokenCount,
          historyEnd: input.messages[input.messages.length - 1].index + 1,
          startMoves,
        })
      : undefined;
  const payload = buildPayload(format, messages, toolDefinitions, breakpoints);
  let tokenCount = priming + toolTokenCount;
  let elidedToolResultCount = 0;
  for (const m of messages) {
    tokenCount += m.tokenCount;
    for (const p of m.parts) if (p.type === 'toolResult' && p.elided) elidedToolResultCount++;
  }
  for (const [id, notes] of mapped.notes) {
    const k = kept.get(id);
    if (k) kept.set(id, { ...k, reason: `${k.reason} In the ${format} payload: ${notes.join('; ')}.` });
  }
  const decisions = log.finish(kept);
  const payloadPrefix = payloadPrefixOf(
    format,
    messages,
    toolDefinitions ? { definitions: toolDefinitions, tokens: toolTokenCount } : null,
  );
  return {
    messages,
    payload,
    tokenCount,
    toolTokenCount,
    maxTokens: options.maxTokens,
    maxMessages: options.maxMessages,
    droppedMessageCount: decisions.filter((d) => d.decision.startsWith('DROPPED_')).length,
    // Every cut leaves at least one message out for its limit (the first that does not fit).
    truncated: decisions.some((d) => CUT_DECISIONS.has(d.decision)),
    summaryIncluded: summaryBlock !== null,
    hasCompression: input.compaction !== null,
    elidedToolResultCount,
    isFork: input.flags.isFork,
    isFirstTurn: input.flags.isFirstTurn,
    hasConnectorSwap: input.flags.hasConnectorSwap,
    hasNewTransforms: input.flags.hasNewTransforms ?? false,
    encoding,
    format,
    contextHash: contextHash(payload, encoding, format),
    decisions,
    attachmentProblems: resolved.problems,
    toolMappings: mapped.mappings,
    reusedPrefixTokens: reusedPrefixTokens(payloadPrefix, input.previousPrefix ?? null),
    payloadPrefix,
  };
}

/** The tool names the messages call. */
function* toolNamesOf(list: readonly WorkMessage[]): Iterable<string> {
  for (const w of list) {
    if (w.shape.calls.length === 0) continue;
    for (const p of w.source.parts) if (p.type === 'toolCall') yield p.name;
  }
}
