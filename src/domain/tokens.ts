import { createRequire } from 'node:module';
import { ByteMerger } from './byte-pair-merge.js';
import type { StoredPart, TokenCounts, TokenEncoding } from './types.js';

/**
 * The parts of gpt-tokenizer's encoder this module uses. They are not in its typings (the
 * processor is private), so `checkTokenizerShape` (called at the app's start) checks the methods
 * on the encoder's class and `bpeCounter` checks the instance's fields when an encoding is first
 * used: an upgrade that moved them fails loudly rather than miscounting. This is the one module
 * that touches them; package.json pins gpt-tokenizer's exact version.
 */
interface BpeCore {
  tokenSplitRegex: RegExp;
  getBpeRankFromString(piece: string): number | undefined;
  getBpeRankFromBytes(bytes: Uint8Array): number | undefined;
  bytePairEncode(piece: string): number[];
}

/**
 * Pieces up to this many UTF-16 units go through gpt-tokenizer's own merge (fast and cached for
 * the short pieces ordinary text is made of); longer ones, where its merge is quadratic
 * (base64, minified code, hashes, CJK runs), through the heap merge, which gives the same tokens.
 */
export const LONG_PIECE = 256;

export interface BpeCounter {
  count(text: string): number;
  /** The tokens of `text`, with long pieces merged by the heap merge (for tests). */
  encode(text: string): number[];
}

function bpeCounter(api: object, name: string, longPiece: number): BpeCounter {
  const core = (api as { bytePairEncodingCoreProcessor?: BpeCore }).bytePairEncodingCoreProcessor;
  if (
    !core ||
    !(core.tokenSplitRegex instanceof RegExp) ||
    typeof core.getBpeRankFromString !== 'function' ||
    typeof core.getBpeRankFromBytes !== 'function' ||
    typeof core.bytePairEncode !== 'function'
  ) {
    throw new Error(`gpt-tokenizer's ${name} encoder no longer has the shape domain/tokens.ts relies on.`);
  }
  const merger = new ByteMerger((bytes) => core.getBpeRankFromBytes(bytes));
  const utf8 = new TextEncoder();
  const split = new RegExp(core.tokenSplitRegex.source, core.tokenSplitRegex.flags);
  // The same pieces as gpt-tokenizer's countNative with no special token allowed: special-token
  // text in user content is ordinary text.
  const pieces = function* (text: string) {
    for (const [piece] of text.matchAll(split)) yield piece;
  };
  return {
    count(text) {
      let total = 0;
      for (const piece of pieces(text)) {
        if (core.getBpeRankFromString(piece) !== undefined) total++;
        else if (piece.length <= longPiece) total += core.bytePairEncode(piece).length;
        else total += merger.count(utf8.encode(piece));
      }
      return total;
    },
    encode(text) {
      const out: number[] = [];
      for (const piece of pieces(text)) {
        const rank = core.getBpeRankFromString(piece);
        if (rank !== undefined) out.push(rank);
        else if (piece.length <= longPiece) out.push(...core.bytePairEncode(piece));
        else for (const t of merger.merge(utf8.encode(piece))) out.push(t);
      }
      return out;
    },
  };
}

/**
 * Throws at start when gpt-tokenizer's encoder class no longer has the methods `bpeCounter` calls
 * (without loading any rank table; the instance fields are checked at first use).
 */
export function checkTokenizerShape(): void {
  const { BytePairEncodingCore } = load('gpt-tokenizer/cjs/BytePairEncodingCore') as { BytePairEncodingCore?: { prototype: object } };
  const methods = ['getBpeRankFromString', 'getBpeRankFromBytes', 'bytePairEncode'] as const;
  const proto = BytePairEncodingCore?.prototype as Record<string, unknown> | undefined;
  const missing = methods.filter((name) => typeof proto?.[name] !== 'function');
  if (missing.length) throw new Error(`gpt-tokenizer's encoder lacks ${missing.join(', ')}, which domain/tokens.ts relies on.`);
}

const encodingNames = { O200K_BASE: 'o200k_base', CL100K_BASE: 'cl100k_base' } as const;
type BpeEncoding = keyof typeof encodingNames;
const load = createRequire(import.meta.url);

/**
 * An encoding's rank tables are loaded on first use, not at import: they are large to hold and
 * to build, and a server that only reads (or an idle one) never needs them. They are required
 * synchronously (the package's CommonJS build) because counting is synchronous.
 */
function encodingApi(encoding: BpeEncoding): object {
  const module = load(`gpt-tokenizer/cjs/encoding/${encodingNames[encoding]}`) as { default?: object };
  return module.default ?? module;
}

/** A counter that sends pieces longer than `longPiece` through the heap merge (tests pass 0). */
export const createBpeCounter = (encoding: BpeEncoding, longPiece = LONG_PIECE) =>
  bpeCounter(encodingApi(encoding), encodingNames[encoding], longPiece);

const counters: Partial<Record<BpeEncoding, BpeCounter>> = {};
const bpe = (encoding: BpeEncoding): BpeCounter => (counters[encoding] ??= createBpeCounter(encoding));

/**
 * Counts of texts made ahead of time, by text (long texts counted off the request thread:
 * caches/token-precount.ts). A count found here is the one `countTokens` would make.
 */
export interface KnownTokenCounts {
  get(text: string): TokenCounts | undefined;
}

/**
 * Token counting. Real BPE counts for the two OpenAI encodings (gpt-tokenizer), and characters/4
 * (by code point, rounded up) kept only for comparison. Special-token text in user content is
 * counted as ordinary text, as providers do. `known`: counts made ahead, used instead of counting.
 */
export function countTokens(text: string, encoding: TokenEncoding, known?: KnownTokenCounts): number {
  if (text.length === 0) return 0;
  switch (encoding) {
    case 'O200K_BASE':
    case 'CL100K_BASE':
      return known?.get(text)?.[encoding] ?? bpe(encoding).count(text);
    case 'CHARS_DIV_4':
      return Math.ceil(countCodePoints(text) / 4);
  }
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** Code points of `text` (a surrogate pair is one character); a charCode loop, no iterator. */
export function countCodePoints(text: string): number {
  // Most text has no surrogate at all (a regular expression finds that natively).
  if (!SURROGATE.test(text)) return text.length;
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * A tool call's arguments as OPENAI_CHAT sends them (`function.arguments`) and as they are counted:
 * the stored text, byte for byte; for a row stored before the text was kept, its value serialized.
 */
export function toolArgumentsText(part: { arguments?: unknown; argumentsJson?: string }): string {
  return part.argumentsJson ?? JSON.stringify(part.arguments ?? {});
}

const NO_TEXTS: readonly string[] = [];

/**
 * The texts a part contributes to a model-facing message, each counted on its own, as
 * gpt-tokenizer's chat-completion count does it: a tool call's name and its arguments text apart
 * (`countMessageTokens`: name tokens + arguments tokens + call metadata). Attachments are resolved
 * at assembly and counted there; reasoning and provider parts are counted there too, by the format
 * that sends them (assembly/provider-data.ts): their stored count is 0.
 */
export function partTokenTexts(part: StoredPart): readonly string[] {
  switch (part.type) {
    case 'text':
      return [part.text];
    case 'toolCall':
      return [part.name, toolArgumentsText(part)];
    case 'toolResult':
      return [part.content];
    case 'attachment':
    case 'reasoning':
    case 'providerPart':
      return NO_TEXTS;
  }
}

/** Content tokens of one part (framing excluded). */
export function countPartTokens(part: StoredPart, encoding: TokenEncoding, known?: KnownTokenCounts): number {
  switch (part.type) {
    case 'text':
      return countTokens(part.text, encoding, known);
    case 'toolCall':
      return countTokens(part.name, encoding, known) + countTokens(toolArgumentsText(part), encoding, known);
    case 'toolResult':
      return countTokens(part.content, encoding, known);
    case 'attachment':
    case 'reasoning':
    case 'providerPart':
      return 0;
  }
}

/** Content tokens of a list of parts (framing excluded) in one encoding. */
export function countPartsTokens(parts: readonly StoredPart[], encoding: TokenEncoding, known?: KnownTokenCounts): number {
  let total = 0;
  for (const part of parts) total += countPartTokens(part, encoding, known);
  return total;
}

/** Counts stored with a message when it is written, so assembly never re-tokenizes history. */
export function countStoredTokens(parts: readonly StoredPart[], known?: KnownTokenCounts): TokenCounts {
  return { O200K_BASE: countPartsTokens(parts, 'O200K_BASE', known), CL100K_BASE: countPartsTokens(parts, 'CL100K_BASE', known) };
}

/**
 * A stored count for a real encoding, or a fresh count for CHARS_DIV_4 (cheap), uncounted parts,
 * and rows stored before tool-call arguments kept their text (their count was of the arguments as
 * the client sent them, joined to the name; what is sent now is their stored value serialized).
 */
export function tokensFor(parts: readonly StoredPart[], stored: TokenCounts | null, encoding: TokenEncoding): number {
  if (encoding !== 'CHARS_DIV_4' && stored && !hasUntextedToolCall(parts)) return stored[encoding];
  return countPartsTokens(parts, encoding);
}

function hasUntextedToolCall(parts: readonly StoredPart[]): boolean {
  for (let k = 0; k < parts.length; k++) {
    const part = parts[k];
    if (part.type === 'toolCall' && part.argumentsJson === undefined) return true;
  }
  return false;
}
