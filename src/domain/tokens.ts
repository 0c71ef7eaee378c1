import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { StoredPart, TokenCounts, TokenEncoding } from './types.js';

/**
 * Token counting. Real BPE counts for the two OpenAI encodings (gpt-tokenizer), and characters/4
 * (by code point, rounded up) kept only for comparison. Special-token text in user content is
 * counted as ordinary text, as providers do.
 */
export function countTokens(text: string, encoding: TokenEncoding): number {
  if (text.length === 0) return 0;
  switch (encoding) {
    case 'O200K_BASE':
      return encodeO200k(text, { disallowedSpecial: new Set() }).length;
    case 'CL100K_BASE':
      return encodeCl100k(text, { disallowedSpecial: new Set() }).length;
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

/** Tool call arguments as the provider shapes send them (and as they are counted). */
export function toolArgumentsJson(args: unknown): string {
  return JSON.stringify(args ?? {});
}

/**
 * The text a part contributes to a model-facing message, as the provider shapes serialize it
 * (tool call arguments as JSON). Attachments are resolved at assembly and counted there.
 */
export function partTokenText(part: StoredPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'toolCall':
      return part.name + toolArgumentsJson(part.arguments);
    case 'toolResult':
      return part.content;
    case 'attachment':
      return '';
  }
}

/** Content tokens of a list of parts (framing excluded) in one encoding. */
export function countPartsTokens(parts: readonly StoredPart[], encoding: TokenEncoding): number {
  let total = 0;
  for (const part of parts) total += countTokens(partTokenText(part), encoding);
  return total;
}

/** Counts stored with a message when it is written, so assembly never re-tokenizes history. */
export function countStoredTokens(parts: readonly StoredPart[]): TokenCounts {
  return { O200K_BASE: countPartsTokens(parts, 'O200K_BASE'), CL100K_BASE: countPartsTokens(parts, 'CL100K_BASE') };
}

/** A stored count for a real encoding, or a fresh count for CHARS_DIV_4 (cheap) or uncounted parts. */
export function tokensFor(parts: readonly StoredPart[], stored: TokenCounts | null, encoding: TokenEncoding): number {
  if (encoding !== 'CHARS_DIV_4' && stored) return stored[encoding];
  return countPartsTokens(parts, encoding);
}
