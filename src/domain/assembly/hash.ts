/**
 * Canonical JSON (RFC 8785: object keys sorted recursively by UTF-16 code units, arrays in order,
 * JSON.stringify's strings and numbers) and the context hash: sha256 hex of the canonical
 * serialization of { encoding, format, payload }. Same inputs, same hash; any
 * change to what the provider would receive (or how it is counted) changes it.
 *
 * Payload pieces built from finished messages are sealed (`seal`): their canonical JSON is
 * serialized and UTF-8 encoded once and reused by every later hash, so hashing a 128k-token payload
 * costs little more than SHA-256 over its bytes. The bytes hashed are the same either way.
 *
 * INLINE MEDIA are hashed by identity, not by data (`hashAs`): the object of a payload that holds an
 * image's or a PDF's base64 (a data URL, Anthropic's `source`, Gemini's `inlineData`, …) is hashed
 * as that object with the data replaced by `sha256:<hex>` of the stored content (`attachment:<id>`
 * when not known), so megabytes of base64 are never hashed on the request thread. This holds
 * because an attachment's bytes never change (attachments are written once, never updated) and
 * every format sends them as stored: the stored SHA-256 names the data, and names it the same in
 * an imported copy of the session (`MediaPart.identity`). A change that sends other data for an id (a resized image) must put what it did
 * into the identity.
 */
import { createHash, type Hash } from 'node:crypto';
import { markImmutable } from '../immutable.js';
import type { TokenEncoding } from '../types.js';
import type { ContextFormat } from './types.js';

/** Deeper than this is treated as a cycle (JSON from users is never this deep). */
const MAX_DEPTH = 2_000;

const tooDeep = () => new TypeError(`a structure nested deeper than ${MAX_DEPTH} levels (or cyclic) is not supported`);

/**
 * Whether JavaScript would not keep `key` where it is put: array-index keys ("0", "10") are always
 * enumerated first, in numeric order, so an object holding one next to other keys cannot be built
 * in code-unit order.
 */
function isIndexKey(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57 && /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4_294_967_295;
}

interface WalkState {
  /** An object with an array-index key next to other keys was met. */
  indexKeys: boolean;
}

/**
 * `v` with every object's keys sorted (by UTF-16 code units), copy-on-write: objects and arrays
 * already in canonical order are returned as they are, so canonicalizing a large payload is a walk,
 * not a copy. toJSON is applied first. Throws a TypeError for a cycle (detected by depth).
 * JavaScript enumerates array-index keys ("2", "10") first, in numeric order, whatever the order
 * they were set in: such objects come out in that order, and `state` says one was met.
 */
function walk(v: unknown, depth: number, state: WalkState): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth > MAX_DEPTH) throw tooDeep();
  const obj = v as object & { toJSON?: () => unknown };
  if (typeof obj.toJSON === 'function') return walk(obj.toJSON(), depth + 1, state);
  if (Array.isArray(obj)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < obj.length; i++) {
      const item = walk(obj[i], depth + 1, state);
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
  if (keys.length > 1 && !state.indexKeys && isIndexKey(keys[0])) state.indexKeys = true;
  let members: unknown[] | null = null;
  for (let i = 0; i < keys.length; i++) {
    const member = record[keys[i]];
    const walked = walk(member, depth + 1, state);
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
 * JSON with every object's keys sorted recursively by UTF-16 code units, JSON semantics otherwise
 * (toJSON honoured, undefined/function/symbol members left out of objects, null in arrays,
 * non-finite numbers as null): the canonical form of RFC 8785 (JCS), whose number and string
 * rules are JSON.stringify's. Throws a TypeError for what JSON cannot hold: bigint, cycles, or an
 * undefined/function/symbol value at the top.
 */
export function canonicalJson(value: unknown): string {
  const state: WalkState = { indexKeys: false };
  const canonical = walk(value, 0, state);
  if (state.indexKeys) {
    // JSON.stringify would put array-index keys first: write the keys out in order instead.
    let json = '';
    writeStructure(value, { text: (t) => (json += t), bytes: (b) => (json += b.toString('utf8')) }, 0);
    return json;
  }
  const json = JSON.stringify(canonical) as string | undefined;
  if (json === undefined) throw new TypeError(`a ${typeof value} is not a JSON value`);
  return json;
}

/** Canonical JSON (UTF-8) of sealed values, once serialized; null until first needed. */
const sealedJson = new WeakMap<object, Buffer | null>();

/**
 * Deep-freezes `value` (plain JSON data) and marks it so that its canonical JSON is computed once
 * and kept as long as the value lives. For payload pieces that are reused across assemblies.
 */
export function seal<T extends object>(value: T): T {
  markImmutable(value);
  if (!sealedJson.has(value)) sealedJson.set(value, null);
  return value;
}

/**
 * Marks `value`, an object of a payload holding an inline media's base64 in `key`, to be hashed as
 * if `key` held `identity` (see "INLINE MEDIA" above). Such objects are built anew for every
 * payload and never sealed (their messages' parts are made per assembly), so the mark is only read
 * by `contextHash`; `canonicalJson` writes the data.
 */
export function hashAs<T extends object>(value: T, key: keyof T & string, identity: string): T {
  sealedJson.set(value, Buffer.from(canonicalJson({ ...value, [key]: identity })));
  return value;
}

/** Where canonical JSON is written: text (structure, small values) or bytes (a sealed value's JSON). */
export interface CanonicalSink {
  text(json: string): void;
  bytes(utf8: Buffer): void;
}

const omittedInObjects = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/**
 * Writes `canonicalJson(value)` to `sink`, using the kept bytes of sealed values: the same text,
 * written piece by piece (keys in code-unit order, array-index keys included), except that an
 * object marked by `hashAs` is written with its identity in place of its data.
 */
export function writeCanonicalJson(value: unknown, sink: CanonicalSink, depth = 0): void {
  const sealed = value !== null && typeof value === 'object' ? sealedJson.get(value) : undefined;
  if (sealed === undefined) {
    writeStructure(value, sink, depth);
    return;
  }
  let bytes = sealed;
  if (bytes === null) {
    bytes = Buffer.from(canonicalJson(value));
    sealedJson.set(value!, bytes);
  }
  sink.bytes(bytes);
}

/** `value` itself written out (whether sealed or not); what it holds through writeCanonicalJson. */
function writeStructure(value: unknown, sink: CanonicalSink, depth: number): void {
  if (value === null || typeof value !== 'object') {
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) throw new TypeError(`a ${typeof value} is not a JSON value`);
    sink.text(json);
    return;
  }
  if (depth > MAX_DEPTH) throw tooDeep();
  const obj = value as object & { toJSON?: () => unknown };
  if (typeof obj.toJSON === 'function') {
    writeCanonicalJson(obj.toJSON(), sink, depth + 1);
    return;
  }
  if (Array.isArray(obj)) {
    sink.text('[');
    for (let i = 0; i < obj.length; i++) {
      if (i > 0) sink.text(',');
      const item: unknown = obj[i];
      if (omittedInObjects(item)) sink.text('null');
      else writeCanonicalJson(item, sink, depth + 1);
    }
    sink.text(']');
    return;
  }
  if (obj instanceof Number || obj instanceof String || obj instanceof Boolean) {
    // Boxed primitives: JSON holds the value they box.
    sink.text(JSON.stringify(obj));
    return;
  }
  const record = obj as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  sink.text('{');
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (omittedInObjects(member)) continue;
    sink.text(first ? `${JSON.stringify(key)}:` : `,${JSON.stringify(key)}:`);
    first = false;
    writeCanonicalJson(member, sink, depth + 1);
  }
  sink.text('}');
}

/** Feeds a hash: text is gathered and hashed in runs, sealed bytes are hashed as they are. */
class HashSink implements CanonicalSink {
  private pending = '';
  constructor(private readonly hash: Hash) {}
  text(json: string) {
    this.pending += json;
  }
  bytes(utf8: Buffer) {
    this.flush();
    this.hash.update(utf8);
  }
  flush() {
    if (this.pending.length > 0) this.hash.update(this.pending);
    this.pending = '';
  }
}

export function contextHash(payload: unknown, encoding: TokenEncoding, format: ContextFormat): string {
  const hash = createHash('sha256');
  const sink = new HashSink(hash);
  writeCanonicalJson({ encoding, format, payload }, sink);
  sink.flush();
  return hash.digest('hex');
}
