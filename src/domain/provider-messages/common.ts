/**
 * What the provider readers share: a reader walks one provider's JSON (request items or a response
 * object) and yields `MessageInputData` (the inputs `appendMessages` takes) whose parts keep every
 * field of every block, so the payload format of the same provider builds the blocks back
 * (assembly/provider-data.ts names the metadata keys). Anything it cannot read is a BAD_USER_INPUT
 * naming the JSON path; nothing is stored then.
 */
import { badInput } from '../errors.js';
import type { MessageInputData, PartInput } from '../parts.js';
import type { MessageRole, ProviderName } from '../types.js';

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A JSON path for errors: `input.messages[2].content[0]`. */
export const at = (where: string, key: string | number) => (typeof key === 'number' ? `${where}[${key}]` : `${where}.${key}`);

export function object(value: unknown, where: string): Json {
  if (!isObject(value)) throw badInput(`${where} must be a JSON object.`);
  return value;
}

export function array(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw badInput(`${where} must be a JSON array.`);
  return value;
}

export function string(value: unknown, where: string): string {
  if (typeof value !== 'string') throw badInput(`${where} must be a string.`);
  return value;
}

export const optionalString = (value: unknown, where: string): string | undefined =>
  value === undefined || value === null ? undefined : string(value, where);

/** `value` without `keys` (and without undefined values); undefined when nothing is left. */
export function without(value: Json, keys: readonly string[]): Json | undefined {
  let out: Json | undefined;
  for (const [key, v] of Object.entries(value)) {
    if (keys.includes(key) || v === undefined) continue;
    (out ??= {})[key] = v;
  }
  return out;
}

/** Provider metadata `{ [provider]: fields }` without undefined fields; undefined when empty and `keep` is false. */
export function metadata(provider: ProviderName, fields: Json, keep = true): Json | undefined {
  const clean = without(fields, []) ?? {};
  if (!keep && Object.keys(clean).length === 0) return undefined;
  return { [provider]: clean };
}

/** Usage of one model call, as `reportUsage` takes it (input excludes cached tokens, which are counted apart). */
export interface ProviderUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  model: string | null;
  /** The response's id: a report repeated with it is a no-op. */
  callId: string | null;
}

export interface ProviderRead {
  messages: MessageInputData[];
  usage: ProviderUsage | null;
}

/** A response's usage: counts as `reportUsage` takes them, the model and the response id when they are strings. */
export function usageOf(
  counts: Pick<ProviderUsage, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>,
  model: unknown,
  id: unknown,
): ProviderUsage {
  return { ...counts, model: typeof model === 'string' ? model : null, callId: typeof id === 'string' ? id : null };
}

export const count = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0);

/**
 * Builds messages in order: parts are added to the current message while the role stays the same
 * (`add`), and `flush` ends it.
 */
export class MessageList {
  readonly messages: MessageInputData[] = [];
  private role: MessageRole | null = null;
  private parts: PartInput[] = [];

  add(role: MessageRole, part: PartInput) {
    if (this.role !== role) this.flush();
    this.role = role;
    this.parts.push(part);
  }

  flush() {
    if (this.role !== null && this.parts.length > 0) this.messages.push({ role: this.role, parts: this.parts });
    this.role = null;
    this.parts = [];
  }

  done(where: string): MessageInputData[] {
    this.flush();
    if (this.messages.length === 0) throw badInput(`${where} holds no message to store.`);
    return this.messages;
  }
}
