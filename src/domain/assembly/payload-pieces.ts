/**
 * What every provider payload builder shares: payload pieces built once per immutable message (see
 * formats.ts, "Payload objects"), the texts of a message, a tool call's arguments as a value, and
 * what media blocks need (their data, how it is hashed, the tool result they go in).
 */
import { isImmutable } from '../immutable.js';
import type { MessageRole } from '../types.js';
import { hashAs, seal } from './hash.js';
import { baseMimeType } from './media-rules.js';
import type { AssembledMessage, AssembledPart, ContextFormat, MediaPart } from './types.js';

const pieces = new WeakMap<object, Array<{ format: ContextFormat; role: MessageRole; piece: object }>>();

/**
 * `build(m)` for message `m`; when `m`'s parts are immutable, built once per format and role, sealed
 * (by `sealPiece`: what ends up in payloads is what must be sealed) and kept while the parts live.
 */
export function pieceOf<T extends object>(
  format: ContextFormat,
  m: AssembledMessage,
  build: (m: AssembledMessage) => T,
  sealPiece: (piece: T) => T = seal,
): T {
  if (!isImmutable(m.parts)) return build(m);
  let kept = pieces.get(m.parts);
  const hit = kept?.find((k) => k.format === format && k.role === m.role);
  if (hit) return hit.piece as T;
  const piece = sealPiece(build(m));
  if (!kept) pieces.set(m.parts, (kept = []));
  kept.push({ format, role: m.role, piece });
  return piece;
}

/** The texts of the text parts, in order. */
export function textsOf(parts: readonly AssembledPart[]): string[] {
  const texts: string[] = [];
  for (let k = 0; k < parts.length; k++) {
    const p = parts[k];
    if (p.type === 'text') texts.push(p.text);
  }
  return texts;
}

/**
 * A tool call's arguments as a JSON value: parsed from the stored text, so keys keep the order the
 * client (the model) gave them (the stored value comes back from jsonb with its keys reordered).
 */
export function toolArgumentsValue(p: { arguments: unknown; argumentsJson?: string }): unknown {
  return p.argumentsJson === undefined ? (p.arguments ?? {}) : JSON.parse(p.argumentsJson);
}

export function toolInputObject(args: unknown): Record<string, unknown> {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) return args as Record<string, unknown>;
  return args === undefined ? {} : { value: args };
}

/** The MIME type a media block names: without parameters, lower case (Anthropic takes exactly `image/png`, …). */
export const mediaType = (p: MediaPart) => baseMimeType(p.mimeType);

/** A base64 media's data URL (OpenAI's image_url, file_data). */
export const dataUrl = (p: MediaPart & { source: { type: 'base64' } }) => `data:${mediaType(p)};base64,${p.source.data}`;

/** What a hash names `p`'s data by: its content's SHA-256 when known, else its attachment id (hash.ts, "INLINE MEDIA"). */
export const mediaIdentity = (p: Pick<MediaPart, 'attachmentId' | 'identity'>) => p.identity ?? `attachment:${p.attachmentId}`;

/**
 * `block`, which holds `p`'s base64 (or its data URL) in `key`, marked to be hashed with the
 * attachment's identity in its place (hash.ts, "INLINE MEDIA"). Build the block only for this call:
 * the mark is on the object.
 */
export function hashedByIdentity<T extends object>(block: T, key: keyof T & string, p: MediaPart): T {
  return hashAs(block, key, mediaIdentity(p));
}

/**
 * A TOOL message's media parts by the tool result each is sent in: the result before it in the
 * message's parts, else the message's first result (formats.ts). Empty when the message has none.
 */
export function mediaByResult(parts: readonly AssembledPart[]): Map<AssembledPart, MediaPart[]> {
  const out = new Map<AssembledPart, MediaPart[]>();
  let owner: AssembledPart | undefined = parts.find((p) => p.type === 'toolResult');
  if (owner === undefined) return out;
  for (const p of parts) {
    if (p.type === 'toolResult') owner = p;
    else if (p.type === 'media') {
      const list = out.get(owner!);
      if (list) list.push(p);
      else out.set(owner!, [p]);
    }
  }
  return out;
}

/**
 * What a builder throws when given media its format's rules refuse (media-rules.ts): never, while
 * the rules and the builders agree (a unit test builds every sendable case in every format).
 */
export const unsendable = (format: ContextFormat, p: MediaPart) =>
  new Error(`${format} was given ${p.media === 'image' ? 'an image' : 'a PDF'} held as ${p.source.type}, which its media rules refuse`);

/**
 * Where a tool result's blocks, kept for its own provider (an Anthropic tool_result's `content`, a
 * Responses function_call_output's `output`), held an image or document that was read as an
 * attachment of the TOOL message: the block is put back there (`withMediaAt`).
 */
export const mediaMarker = (): Record<string, unknown> => ({ type: 'attachment' });

const isMediaMarker = (v: unknown) =>
  v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'attachment' && Object.keys(v).length === 1;

/**
 * A result's kept blocks with its media blocks in place of the markers, in order; media left over
 * (more than markers: media added to the result since) go last, and markers left over (media not
 * sent: a placeholder goes as text instead) are dropped.
 */
export function withMediaAt(given: readonly unknown[], media: readonly unknown[]): unknown[] {
  let k = 0;
  const out: unknown[] = [];
  for (const block of given) {
    if (!isMediaMarker(block)) out.push(block);
    else if (k < media.length) out.push(media[k++]);
  }
  for (; k < media.length; k++) out.push(media[k]);
  return out;
}

/** Whether kept blocks hold a media marker. */
export const hasMediaMarker = (given: readonly unknown[]) => given.some(isMediaMarker);
