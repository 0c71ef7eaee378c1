/**
 * Where ANTHROPIC_MESSAGES marks `cache_control: { type: "ephemeral" }`: the places a prompt cache
 * pays, never more than Anthropic's limit of 4 per request.
 *
 * Anthropic caches a request's prefix (tools, system, messages, in that order) up to a marked
 * block, and a later request reads it when it starts with the same blocks up to a mark of its own
 * or up to about 20 blocks before one; a prefix shorter than the model's minimum (1,024 tokens for
 * most models, more for some) is not cached at all. Writing costs more than plain input (1.25×
 * for 5 minutes), reading a tenth. So a mark is placed where the next calls are likely to send the
 * same prefix, and only past MIN_CACHEABLE_TOKENS:
 *
 * 1. the end of the system block (tools and system prompt, summary, SYSTEM messages): it changes
 *    only when they do;
 * 2. the end of the stable prefix: the last message before the anchor with the most trailing zero
 *    bits among the positions after the context's first message (a position the history fixes, so
 *    that calls that keep the same first message mark the same place until a coarser anchor is
 *    reached): it is read even when more than 20 blocks were appended since, or when the block
 *    before the newest user message changes at every call (the turn context);
 * 3. the newest message: the next call, which sends it again with what follows, reads it.
 *
 * When the first message moves at every call (NEWEST_FIRST once maxTokens binds, or a binding
 * maxMessages), a mark on a message would be written and never read: only the system block is
 * marked. Sources: Anthropic's prompt caching guide (docs.anthropic.com, build-with-claude/
 * prompt-caching: "up to 4 cache breakpoints", the 20-block lookback, the minimum cacheable
 * length, the prices); the payload shape is checked against @anthropic-ai/sdk's types
 * (test/unit/assembly/provider-sdk-types.test.ts).
 */
import type { AssembledMessage } from './types.js';

/** The shortest prefix any Claude model caches (tokens): shorter ones are processed without caching. */
export const MIN_CACHEABLE_TOKENS = 1_024;
/** Anthropic's limit of cache_control breakpoints in one request. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** The marks of one payload: the system block's end, and the assembled messages (by index) whose last block is marked. */
export interface CacheBreakpoints {
  system: boolean;
  messages: ReadonlySet<number>;
}

export const NO_BREAKPOINTS: CacheBreakpoints = { system: false, messages: new Set() };

/**
 * The marks for `messages` (in assembled order; SYSTEM ones are the system block). `toolTokens`:
 * the tool definitions' tokens, first in the prefix; `historyEnd`: the position after the session's
 * newest message; `startMoves`: the first message changes at every call.
 */
export function cacheBreakpoints(
  messages: readonly AssembledMessage[],
  how: { toolTokens: number; historyEnd: number; startMoves: boolean },
): CacheBreakpoints {
  let prefix = how.toolTokens;
  let hasSystem = false;
  for (const m of messages) {
    if (m.role === 'SYSTEM') {
      prefix += m.tokenCount;
      hasSystem = true;
    }
  }
  const system = hasSystem && prefix >= MIN_CACHEABLE_TOKENS;
  const marked = new Set<number>();
  if (how.startMoves) return { system, messages: marked };

  // The conversation's messages, their tokens from the request's start to their end.
  const conversation: { at: number; sourceIndex: number | null; end: number }[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'SYSTEM') continue;
    prefix += m.tokenCount;
    conversation.push({ at: i, sourceIndex: m.sourceIndex, end: prefix });
  }
  if (conversation.length === 0) return { system, messages: marked };
  const newest = conversation[conversation.length - 1];
  const first = conversation.find((c) => c.sourceIndex !== null)?.sourceIndex ?? null;
  const anchor = first === null ? null : stableAnchor(first, how.historyEnd);
  if (anchor !== null) {
    let stable: (typeof conversation)[number] | null = null;
    for (const c of conversation) if (c.sourceIndex !== null && c.sourceIndex < anchor) stable = c;
    if (stable && stable !== newest && stable.end >= MIN_CACHEABLE_TOKENS) marked.add(stable.at);
  }
  if (newest.end >= MIN_CACHEABLE_TOKENS) marked.add(newest.at);
  return { system, messages: marked };
}

/** The position in (first, end) with the most trailing zero bits (unique), or null when there is none. */
export function stableAnchor(first: number, end: number): number | null {
  for (let q = 2 ** 30; q >= 1; q /= 2) {
    const at = Math.floor((end - 1) / q) * q;
    if (at > first) return at;
  }
  return null;
}
