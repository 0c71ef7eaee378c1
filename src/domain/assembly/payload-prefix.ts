/**
 * A payload's prefix, entry by entry, and how much of it the previous assembly of the same session
 * in the same format already sent (`reusedPrefixTokens`).
 *
 * The entries are what the provider reads, in its order: the tool definitions (when the payload
 * has them), then every assembled message, the SYSTEM ones first for ANTHROPIC_MESSAGES and GEMINI
 * (they go to `system` / `systemInstruction`, ahead of the conversation). Each is kept as an 8-byte
 * hash of its role and parts (an inline image or PDF by its attachment's identity, as the context
 * hash does) and the tokens up to its end. Two payloads share their tokens up to the first entry
 * that differs. A format sends an entry's role and parts the same way every time, so equal entries
 * are equal in the payload; cache_control marks are not parts, and are left out.
 */
import { createHash } from 'node:crypto';
import { isImmutable } from '../immutable.js';
import { canonicalJson } from './hash.js';
import type { AssembledMessage, AssembledPart, ContextFormat } from './types.js';

/** Bytes of one entry's hash. */
export const PREFIX_HASH_BYTES = 8;

export interface PayloadPrefix {
  /** One PREFIX_HASH_BYTES hash per entry, in order. */
  hashes: Uint8Array;
  /** The tokens from the payload's start to the end of each entry. */
  tokens: number[];
}

const digest = (json: string) => createHash('sha256').update(json).digest().subarray(0, PREFIX_HASH_BYTES);

/** Hashes of immutable parts (finished messages, their elided forms), by role: the same every time, so made once. */
const kept = new WeakMap<readonly AssembledPart[], Map<string, Uint8Array>>();

function entryHash(m: AssembledMessage): Uint8Array {
  const memo = isImmutable(m.parts) ? kept.get(m.parts) : undefined;
  const hit = memo?.get(m.role);
  if (hit) return hit;
  const parts = m.parts.map((p) =>
    p.type === 'media' && p.source.type === 'base64' ? { ...p, source: { data: `attachment:${p.attachmentId}`, type: 'base64' } } : p,
  );
  const hash = digest(canonicalJson({ parts, role: m.role }));
  if (isImmutable(m.parts)) {
    if (memo) memo.set(m.role, hash);
    else kept.set(m.parts, new Map([[m.role, hash]]));
  }
  return hash;
}

/** The entries of a payload of `messages` in `format`, with the tool definitions it has (and their tokens). */
export function payloadPrefixOf(
  format: ContextFormat,
  messages: readonly AssembledMessage[],
  tools: { definitions: readonly object[]; tokens: number } | null,
): PayloadPrefix {
  const systemFirst = format === 'ANTHROPIC_MESSAGES' || format === 'GEMINI';
  const ordered = systemFirst ? [...messages.filter((m) => m.role === 'SYSTEM'), ...messages.filter((m) => m.role !== 'SYSTEM')] : messages;
  const count = ordered.length + (tools ? 1 : 0);
  const hashes = new Uint8Array(count * PREFIX_HASH_BYTES);
  const tokens: number[] = [];
  let at = 0;
  let total = 0;
  if (tools) {
    hashes.set(digest(canonicalJson(tools.definitions)), 0);
    total += tools.tokens;
    tokens.push(total);
    at++;
  }
  for (const m of ordered) {
    hashes.set(entryHash(m), at * PREFIX_HASH_BYTES);
    total += m.tokenCount;
    tokens.push(total);
    at++;
  }
  return { hashes, tokens };
}

/** Tokens of `current` up to the end of its last entry equal, with every one before it, to `previous`'s (0 without one). */
export function reusedPrefixTokens(current: PayloadPrefix, previous: PayloadPrefix | null): number {
  if (!previous) return 0;
  const entries = Math.min(current.tokens.length, previous.hashes.length / PREFIX_HASH_BYTES);
  let same = 0;
  while (same < entries && sameEntry(current.hashes, previous.hashes, same)) same++;
  return same === 0 ? 0 : current.tokens[same - 1];
}

function sameEntry(a: Uint8Array, b: Uint8Array, entry: number): boolean {
  const from = entry * PREFIX_HASH_BYTES;
  for (let k = from; k < from + PREFIX_HASH_BYTES; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** Whether two prefixes are the same (nothing to store again). */
export function samePrefix(a: PayloadPrefix, b: PayloadPrefix | null): boolean {
  if (!b || a.tokens.length !== b.tokens.length || a.hashes.length !== b.hashes.length) return false;
  for (let i = 0; i < a.tokens.length; i++) if (a.tokens[i] !== b.tokens[i]) return false;
  for (let k = 0; k < a.hashes.length; k++) if (a.hashes[k] !== b.hashes[k]) return false;
  return true;
}
