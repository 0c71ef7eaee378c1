/**
 * What every provider payload builder shares: payload pieces built once per immutable message (see
 * formats.ts, "Payload objects"), the texts of a message, and a tool call's arguments as a value.
 */
import { isImmutable } from '../immutable.js';
import type { MessageRole } from '../types.js';
import { seal } from './hash.js';
import type { AssembledMessage, AssembledPart, ContextFormat } from './types.js';

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
