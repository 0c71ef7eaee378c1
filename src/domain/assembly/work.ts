/**
 * The working list the pipeline steps pass along: one entry per source message still in the
 * context. Entries are immutable from the steps' point of view (a step that changes one, such as
 * elision, returns a new entry); the only mutable fields are memo caches, so that a message's
 * parts and token count are materialized at most once, and only for messages that are looked at
 * (budget fitting stops at the budget, so a 10,000-message history is mostly never touched).
 */
import { countCodePoints, countPartTokens, countTokens, tokensFor } from '../tokens.js';
import type { DomainMessage, StoredPart, TokenEncoding } from '../types.js';
import { toolShapeOf, type ToolShape } from './tool-shape.js';
import { markImmutable } from '../immutable.js';
import { providerDataTokens, responsesFramingDelta } from './provider-data.js';
import type { AssembledPart, ContextFormat, Removal } from './types.js';

export interface WorkMessage {
  readonly source: DomainMessage;
  /** Tool result parts are replaced by a stub (set by `elideOldToolResults`). */
  readonly elided: boolean;
  /** Why its results are stubs, when not for keepToolCallRounds (set by `stripToolOutputs`). */
  readonly elidedReason?: string;
  /** Role, call ids and result ids, extracted once (elision keeps them). */
  readonly shape: ToolShape;
  /** @internal memo of `workParts` */
  memoParts?: StoredPart[];
  /** @internal memo of `workContentTokens` (for `memoEncoding`) */
  memoTokens?: number;
  memoEncoding?: TokenEncoding;
  /** @internal memo of `workProviderTokens` (for `memoProviderKey`) */
  memoProviderTokens?: number;
  memoProviderKey?: string;
}

export interface StepResult {
  list: WorkMessage[];
  removed: Removal[];
}

export function toWork(message: DomainMessage): WorkMessage {
  return { source: message, elided: false, shape: toolShapeOf(message) };
}

/** The view tool-round helpers take of a working entry. */
export const shapeOf = (w: WorkMessage): ToolShape => w.shape;

const stubText = (characters: number) => `[tool result elided: ${characters} characters]`;

/** The stub that replaces an elided tool result: says that it was elided and how long it was. */
export function toolResultStub(content: string): string {
  return stubText(countCodePoints(content));
}

const stubBase = new Map<TokenEncoding, number>();

/**
 * Tokens of `toolResultStub` for a result of `characters` characters, without running the BPE on
 * every stub (thousands of old results get one): in cl100k and o200k the pre-tokenizer splits
 * digits into groups of at most three, each group is one token, and the text around the number is
 * split apart from it, so the count is that of the stub for "0" minus one plus one per group. A
 * unit test checks the formula against the real count over a wide range of lengths.
 */
export function toolResultStubTokens(characters: number, encoding: TokenEncoding): number {
  if (encoding === 'CHARS_DIV_4') return countTokens(stubText(characters), encoding);
  let base = stubBase.get(encoding);
  if (base === undefined) {
    base = countTokens(stubText(0), encoding) - 1;
    stubBase.set(encoding, base);
  }
  return base + Math.ceil(String(characters).length / 3);
}

/** The message's parts as the model will see them (stubs for elided results; attachments unresolved). */
export function workParts(w: WorkMessage): StoredPart[] {
  if (!w.elided) return w.source.parts;
  if (!w.memoParts) {
    w.memoParts = w.source.parts.map((part) => (part.type === 'toolResult' ? { ...part, content: toolResultStub(part.content) } : part));
  }
  return w.memoParts;
}

/**
 * What an elided finished message without attachments sends (its results as stubs, flagged
 * `elided`), by its frozen stored parts: the same every time, so built once and frozen, and its
 * payload pieces are then kept and hashed from their kept bytes like any finished message's
 * (formats.ts). A long window elides thousands of old results. Weakly keyed: it lives as long as
 * the parts do. The caller checks that the parts are immutable and hold no attachment.
 */
const elidedParts = new WeakMap<readonly StoredPart[], AssembledPart[]>();

export function elidedPartsOf(w: WorkMessage): AssembledPart[] {
  let parts = elidedParts.get(w.source.parts);
  if (!parts) {
    const sent = workParts(w).map((part) => (part.type === 'toolResult' ? { ...part, elided: true } : part)) as AssembledPart[];
    parts = markImmutable(sent);
    elidedParts.set(w.source.parts, parts);
  }
  return parts;
}

/**
 * Content tokens of the message, framing and attachments excluded. Stored counts are used as they
 * are (never re-tokenized); only stubs of elided results (and CHARS_DIV_4, or messages stored
 * without counts) are counted here.
 */
export function workContentTokens(w: WorkMessage, encoding: TokenEncoding): number {
  if (w.memoEncoding === encoding) return w.memoTokens!;
  let tokens: number;
  if (!w.elided) {
    tokens = tokensFor(w.source.parts, w.source.tokens, encoding);
  } else {
    tokens = 0;
    for (const part of w.source.parts) {
      tokens +=
        part.type === 'toolResult' ? toolResultStubTokens(countCodePoints(part.content), encoding) : countPartTokens(part, encoding);
    }
  }
  w.memoTokens = tokens;
  w.memoEncoding = encoding;
  return tokens;
}

/** Index (in `list`) of the newest USER message, or -1. */
export function newestUserIndex(list: readonly WorkMessage[]): number {
  for (let i = list.length - 1; i >= 0; i--) if (list[i].source.role === 'USER') return i;
  return -1;
}

/** Human label of a source message used in reasons: `message #12 (ASSISTANT)`. */
export function label(message: DomainMessage): string {
  return `message #${message.index} (${message.role})`;
}

/**
 * Tokens a format adds for the message's reasoning and provider parts (0 where it leaves them out)
 * and, in OPENAI_RESPONSES, for an assistant message sent as several message items
 * (provider-data.ts): 0 for the messages that have neither, without walking their parts again.
 */
export function workProviderTokens(w: WorkMessage, format: ContextFormat, encoding: TokenEncoding): number {
  const responsesItems = format === 'OPENAI_RESPONSES' && w.shape.role === 'ASSISTANT' && w.shape.others > 1;
  if (w.shape.providerData === 0 && !responsesItems) return 0;
  const key = `${format}:${encoding}`;
  if (w.memoProviderKey === key) return w.memoProviderTokens!;
  let tokens = responsesItems ? responsesFramingDelta(w.source.parts) : 0;
  if (w.shape.providerData > 0) for (const part of w.source.parts) tokens += providerDataTokens(format, part, encoding);
  w.memoProviderTokens = tokens;
  w.memoProviderKey = key;
  return tokens;
}
