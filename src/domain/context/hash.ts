/**
 * Canonical JSON (object keys sorted recursively, arrays in order) and the context hash: sha256 hex
 * of the canonical serialization of { encoding, format, payload }. Same inputs, same hash; any
 * change to what the provider would receive (or how it is counted) changes it.
 */
import { createHash } from 'node:crypto';
import type { TokenEncoding } from '../types.js';
import type { ContextFormat } from './types.js';

/**
 * `value` with every object's keys sorted (by UTF-16 code units), copy-on-write: objects and arrays
 * already in canonical order are returned as they are, so canonicalizing a large payload is a walk,
 * not a copy. toJSON is applied first. Throws a TypeError for a cycle (detected by depth).
 */
export function canonicalize(value: unknown): unknown {
  return walk(value, 0);
}

/** Deeper than this is treated as a cycle (JSON from users is never this deep). */
const MAX_DEPTH = 2_000;

function walk(v: unknown, depth: number): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth > MAX_DEPTH) throw new TypeError(`a structure nested deeper than ${MAX_DEPTH} levels (or cyclic) is not supported`);
  const obj = v as object & { toJSON?: () => unknown };
  if (typeof obj.toJSON === 'function') return walk(obj.toJSON(), depth + 1);
  if (Array.isArray(obj)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < obj.length; i++) {
      const item = walk(obj[i], depth + 1);
      if (copy === null && item !== obj[i]) copy = obj.slice(0, i);
      if (copy !== null) copy.push(item);
    }
    return copy ?? obj;
  }
  const record = obj as Record<string, unknown>;
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1] > keys[i]) {
      sorted = false;
      break;
    }
  }
  let members: unknown[] | null = null;
  for (let i = 0; i < keys.length; i++) {
    const member = record[keys[i]];
    const walked = walk(member, depth + 1);
    if (members === null && walked !== member) {
      members = new Array<unknown>(keys.length);
      for (let j = 0; j < i; j++) members[j] = record[keys[j]];
    }
    if (members !== null) members[i] = walked;
  }
  if (sorted && members === null) return obj;
  const order = keys.map((_, i) => i);
  if (!sorted) order.sort((a, b) => (keys[a] < keys[b] ? -1 : 1));
  const copy: Record<string, unknown> = {};
  for (const i of order) copy[keys[i]] = members ? members[i] : record[keys[i]];
  return copy;
}

/**
 * JSON with every object's keys sorted recursively, JSON semantics otherwise (toJSON honoured,
 * undefined/function/symbol members left out of objects, null in arrays). Throws a TypeError for
 * what JSON cannot hold: bigint, cycles, or an undefined/function/symbol value at the top.
 * Non-finite numbers become null, as in JSON.stringify.
 */
export function canonicalJson(value: unknown): string {
  const json = JSON.stringify(canonicalize(value)) as string | undefined;
  if (json === undefined) throw new TypeError(`a ${typeof value} is not a JSON value`);
  return json;
}

export function contextHash(payload: unknown, encoding: TokenEncoding, format: ContextFormat): string {
  return createHash('sha256').update(canonicalJson({ encoding, format, payload })).digest('hex');
}
