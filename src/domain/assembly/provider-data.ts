/**
 * Reasoning parts, provider parts and provider metadata in the payload formats: which format sends
 * which part, why the others leave it out, and what a sent one is counted (docs/provider-replay.md
 * has each rule with its source).
 *
 * A part's `providerMetadata[provider]` is read only by that provider's formats (`anthropic`:
 * ANTHROPIC_MESSAGES; `openai`: OPENAI_CHAT and OPENAI_RESPONSES; `google`: GEMINI). Its keys:
 * - `signature` (anthropic thinking), `redactedData` (anthropic redacted_thinking), `itemId` and
 *   `encryptedContent` (openai Responses items), `thoughtSignature` (google parts): the contract's;
 * - `extra`: the block's own keys this server does not model (Anthropic `citations`, Responses
 *   `annotations` and `status`, Gemini `thought`…), put back on the block as they were;
 * - a few named fields listed where they are read (`content` of an Anthropic tool_result given as
 *   blocks, `output` of a Responses function_call_output given as parts, `response` of a Gemini
 *   functionResponse that is not `{output}`/`{error}`, `role` `developer`, `summary`).
 * A reasoning part is sent only to the provider that made it and only with what that provider needs
 * to accept it back; everywhere else it is left out, and the message's decision says so. Reasoning
 * is never turned into visible text.
 */
import { countTokens } from '../tokens.js';
import type { ProviderName, StoredPart, TokenEncoding } from '../types.js';
import type { AssembledPart, ContextFormat } from './types.js';

export const FORMAT_PROVIDER: Readonly<Record<ContextFormat, ProviderName | null>> = {
  GENERIC: null,
  OPENAI_CHAT: 'openai',
  OPENAI_RESPONSES: 'openai',
  ANTHROPIC_MESSAGES: 'anthropic',
  GEMINI: 'google',
};

type Record_ = Record<string, unknown>;

const isRecord = (v: unknown): v is Record_ => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The part's metadata for `provider` (an object), or undefined. */
export function metaOf(part: { providerMetadata?: Record_ }, provider: ProviderName): Record_ | undefined {
  const m = part.providerMetadata?.[provider];
  return isRecord(m) ? m : undefined;
}

/** A string field of the part's metadata for `provider`. */
export function metaString(part: { providerMetadata?: Record_ }, provider: ProviderName, key: string): string | undefined {
  const v = metaOf(part, provider)?.[key];
  return typeof v === 'string' ? v : undefined;
}

/**
 * The block keys kept in `providerMetadata[provider][key]` (an object; {} when none): `extra`, or
 * `chatExtra` for what a Chat Completions part had (OpenAI's two shapes keep theirs apart).
 */
export function extraOf(part: { providerMetadata?: Record_ }, provider: ProviderName, key: 'extra' | 'chatExtra' = 'extra'): Record_ {
  const extra = metaOf(part, provider)?.[key];
  return isRecord(extra) ? extra : {};
}

/** Parts only some formats send: reasoning and provider parts. */
export const isProviderData = (part: { type: string }) => part.type === 'reasoning' || part.type === 'providerPart';

/** Why `format` leaves `part` out of its payload, or null when it sends it. */
export function leftOutBecause(format: ContextFormat, part: AssembledPart | StoredPart): string | null {
  if (part.type === 'reasoning') {
    switch (format) {
      case 'GENERIC':
        return null;
      case 'OPENAI_CHAT':
        return 'Chat Completions takes no reasoning back';
      case 'ANTHROPIC_MESSAGES':
        if (part.redacted ? metaString(part, 'anthropic', 'redactedData') : metaString(part, 'anthropic', 'signature')) return null;
        return 'Anthropic takes thinking back only with the signature it gave it';
      case 'OPENAI_RESPONSES':
        return metaString(part, 'openai', 'itemId')
          ? null
          : 'the Responses API takes a reasoning item back only with the id OpenAI gave it';
      case 'GEMINI':
        return metaOf(part, 'google') ? null : 'Gemini takes back only the thoughts it returned';
    }
  }
  if (part.type === 'providerPart') {
    if (format === 'GENERIC') return null;
    if (FORMAT_PROVIDER[format] !== part.provider) return `a ${part.provider} block is sent to ${part.provider} only`;
    if (part.format !== undefined && part.format !== format) return `this ${part.provider} block is a piece of ${part.format} payloads`;
    return null;
  }
  return null;
}

/** Whether `format` sends `part` (every part but reasoning and provider parts is sent). */
export const sends = (format: ContextFormat, part: AssembledPart | StoredPart) => leftOutBecause(format, part) === null;

const counted = new WeakMap<object, Map<string, number>>();

/** Opaque data up to this many characters is counted by the BPE; longer, by its bytes. */
const OPAQUE_BPE_CHARS = 2_048;

const opaqueTokens = (text: string, encoding: TokenEncoding) =>
  text.length <= OPAQUE_BPE_CHARS || encoding === 'CHARS_DIV_4' ? countTokens(text, encoding) : Buffer.byteLength(text, 'utf8');

/**
 * Readable text (reasoning) is counted by the BPE, which is fast on prose; a long text holding a run
 * of over 256 non-space characters (the pieces the BPE merges slowly) is counted as opaque data.
 */
const readableTokens = (text: string, encoding: TokenEncoding) =>
  text.length > OPAQUE_BPE_CHARS && /\S{257}/.test(text) ? opaqueTokens(text, encoding) : countTokens(text, encoding);

/**
 * Tokens of a reasoning or provider part as `format` sends it (0 when it leaves it out). Estimates
 * (see docs/provider-replay.md): reasoning is counted as its readable text (Anthropic thinking, a
 * Responses summary, a Gemini thought; a redacted block as its data), on every turn it is sent,
 * which is what Anthropic's models from Opus 4.5 on count and an upper bound for the models and APIs
 * that strip earlier turns' reasoning; signatures and encrypted content are not counted; a provider
 * part is counted as its JSON text. Opaque data (a provider part, redacted thinking) longer than
 * OPAQUE_BPE_CHARS is counted as its UTF-8 bytes, an upper bound (every token is at least one
 * byte): such data is mostly base64, whose long pieces the BPE merges too slowly for the request
 * thread. Counted once per part object,
 * format and encoding.
 */
export function providerDataTokens(format: ContextFormat, part: StoredPart | AssembledPart, encoding: TokenEncoding): number {
  if (!isProviderData(part) || !sends(format, part)) return 0;
  const key = `${format}:${encoding}`;
  let byKey = counted.get(part);
  const hit = byKey?.get(key);
  if (hit !== undefined) return hit;
  let tokens: number;
  if (part.type === 'reasoning') {
    tokens =
      part.redacted && format === 'ANTHROPIC_MESSAGES'
        ? opaqueTokens(metaString(part, 'anthropic', 'redactedData') ?? '', encoding)
        : readableTokens(part.text, encoding);
  } else if (part.type === 'providerPart') {
    tokens = opaqueTokens(JSON.stringify(part.data), encoding);
  } else tokens = 0;
  if (!byKey) counted.set(part, (byKey = new Map()));
  byKey.set(key, tokens);
  return tokens;
}

/**
 * Framing OPENAI_RESPONSES adds to an assistant message beyond `framingTokensFor`'s one message
 * item: each message item is 4 tokens (as a Chat message), and an assistant message gives one item
 * per run of text parts of one OpenAI item and one per text part without one (formats.ts).
 */
export function responsesFramingDelta(parts: readonly (StoredPart | AssembledPart)[]): number {
  let items = 0;
  let run: string | null = null;
  for (const p of parts) {
    if (p.type !== 'text' && p.type !== 'attachment') {
      run = null;
      continue;
    }
    const id = p.type === 'text' ? metaString(p, 'openai', 'itemId') : undefined;
    if (id === undefined || id !== run) items++;
    run = id ?? null;
  }
  return items > 1 ? MESSAGE_ITEM_TOKENS * (items - 1) : 0;
}

const MESSAGE_ITEM_TOKENS = 4;
