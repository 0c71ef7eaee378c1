/**
 * The providers' documented request rules that stored data may break, and what assembly does about
 * each (the decisions are listed in formats.ts, "PROVIDER RULES").
 *
 * Call ids and tool names are stored exactly as the client (the model) gave them; each provider
 * format maps what its provider would refuse to what it accepts (`IDENTIFIER_RULES`). The mapping
 * is deterministic (a function of the names and ids the context holds, whatever their order),
 * collision-free within a payload (two originals never map to one sent value, and a value that is
 * sent as it is never stands for another), and keeps every result paired with its call. Each
 * mapped message's decision names the original and what was sent, and the result lists the pairs
 * (`ToolMapping`) so an agent can map the model's answer back.
 *
 * Tool names are mapped before the budget is fitted (`mapToolNames`, over every candidate message):
 * the name is counted, so the count must be the sent name's. Call ids are never counted, so they
 * are mapped on the final messages (`applyProviderRules`), where uniqueness within the request is
 * known. GENERIC is not a provider's wire shape: it sends the stored ids and names as they are.
 */
import { createHash } from 'node:crypto';
import { countTokens } from '../tokens.js';
import type { StoredPart, TokenEncoding } from '../types.js';
import { isProviderData, leftOutBecause, metaOf, sends } from './provider-data.js';
import type { AssembledMessage, AssembledPart, ContextFormat, ToolMapping } from './types.js';

/** What one provider accepts for one kind of identifier, and how anything else is made acceptable. */
export interface IdentifierRule {
  /** The rule in words, for decisions (`1-64 letters, digits, _ or -`). */
  readonly text: string;
  readonly max: number;
  valid(value: string): boolean;
  /** A value the rule accepts, as close to `value` as the rule allows (no suffix yet). */
  clean(value: string): string;
}

const pattern = (text: string, re: RegExp, max: number, invalid: RegExp, lead?: RegExp): IdentifierRule => ({
  text,
  max,
  valid: (value) => value.length <= max && re.test(value),
  clean: (value) => {
    let cleaned = value.replace(invalid, '_');
    if (lead && !lead.test(cleaned)) cleaned = `_${cleaned}`;
    return cleaned.length === 0 ? '_' : cleaned;
  },
});

/** Anthropic's `tool_use.id` rule (its documented pattern; stored ids are at most 256 characters). */
const ANTHROPIC_ID = pattern('letters, digits, _ or -', /^[a-zA-Z0-9_-]+$/, 256, /[^a-zA-Z0-9_-]/g);
/** Anthropic's tool name rule; OpenAI's function-name rule (both APIs) is the same. */
const PROVIDER_NAME = pattern('1-64 letters, digits, _ or -', /^[a-zA-Z0-9_-]{1,64}$/, 64, /[^a-zA-Z0-9_-]/g);
/** Chat Completions refuses a `tool_calls[].id` longer than 40 characters (`string_above_max_length`). */
const OPENAI_CHAT_ID = pattern('1-40 letters, digits, _ or -', /^[a-zA-Z0-9_-]{1,40}$/, 40, /[^a-zA-Z0-9_-]/g);
/** Responses `call_id`: OpenAI documents no pattern; what its own ids (`call_…`, `fc_…`) are is sent as it is. */
const OPENAI_RESPONSES_ID = pattern('1-64 letters, digits, _ or -', /^[a-zA-Z0-9_-]{1,64}$/, 64, /[^a-zA-Z0-9_-]/g);
/** Gemini's function name rule: starts with a letter or _, then letters, digits, _ . : or -, at most 64. */
const GEMINI_NAME = pattern(
  'up to 64 letters, digits, _ . : or -, starting with a letter or _',
  /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/,
  64,
  /[^a-zA-Z0-9_.:-]/g,
  /^[a-zA-Z_]/,
);

/** Per format: the call-id rule (null: ids are not sent) and the tool-name rule (null: names sent as stored). */
export const IDENTIFIER_RULES: Record<ContextFormat, { id: IdentifierRule | null; name: IdentifierRule | null }> = {
  GENERIC: { id: null, name: null },
  OPENAI_CHAT: { id: OPENAI_CHAT_ID, name: PROVIDER_NAME },
  OPENAI_RESPONSES: { id: OPENAI_RESPONSES_ID, name: PROVIDER_NAME },
  ANTHROPIC_MESSAGES: { id: ANTHROPIC_ID, name: PROVIDER_NAME },
  // Gemini pairs a functionResponse with its call by name and position: call ids are not sent.
  GEMINI: { id: null, name: GEMINI_NAME },
};

const shortHash = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 8);

/** `base` cut so that `base + suffix` fits in `max`. */
const withSuffix = (base: string, suffix: string, max: number) => base.slice(0, max - suffix.length) + suffix;

/** The cleaned value with a hash of the original: two originals that clean alike stay apart. */
const hashed = (rule: IdentifierRule, original: string) => withSuffix(rule.clean(original), `_${shortHash(original)}`, rule.max);

/** Whether a text is sent as an Anthropic or Gemini text block (both refuse empty ones; Anthropic whitespace-only ones too). */
export const hasVisibleText = (text: string) => /\S/.test(text);

/**
 * Whether a message gives at least one content block in ANTHROPIC_MESSAGES and GEMINI (it is a turn
 * of the payload): a visible text, a tool call or result, an attachment, or a reasoning or provider
 * part that `format` sends.
 */
export function sendsAnthropicContent(parts: readonly (StoredPart | AssembledPart)[], format: ContextFormat): boolean {
  return parts.some((p) => (p.type === 'text' ? hasVisibleText(p.text) : isProviderData(p) ? sends(format, p) : true));
}

/** Formats whose payload must start with a user turn and holds no empty text block (Anthropic's and Gemini's rules). */
export const startsWithUserTurn = (format: ContextFormat) => format === 'ANTHROPIC_MESSAGES' || format === 'GEMINI';

/** The tool names of a context mapped for its format: original → sent (only names that change). */
export interface NameMap {
  readonly sent: ReadonlyMap<string, string>;
  /** Token difference (sent minus original) of each mapped name, in the encoding it was made for. */
  readonly delta: ReadonlyMap<string, number>;
}

export const NO_NAMES: NameMap = { sent: new Map(), delta: new Map() };

/**
 * Maps the tool names of `names` (every name the context may send) that `format` refuses. A name
 * the format accepts is sent as it is and reserved; a refused one is cleaned (`weather.lookup` →
 * `weather_lookup`), and gets a hash of the original appended when the cleaned value is taken by
 * another name or when two refused names clean alike (all of them then, so the result does not
 * depend on their order).
 */
export function mapToolNames(names: Iterable<string>, format: ContextFormat, encoding: TokenEncoding): NameMap {
  const rule = IDENTIFIER_RULES[format].name;
  if (!rule) return NO_NAMES;
  const refused: string[] = [];
  const taken = new Set<string>();
  for (const name of new Set(names)) {
    if (rule.valid(name)) taken.add(name);
    else refused.push(name);
  }
  if (refused.length === 0) return NO_NAMES;
  refused.sort();
  const cleanedCount = new Map<string, number>();
  for (const name of refused) {
    const cleaned = rule.clean(name).slice(0, rule.max);
    cleanedCount.set(cleaned, (cleanedCount.get(cleaned) ?? 0) + 1);
  }
  const sent = new Map<string, string>();
  const delta = new Map<string, number>();
  for (const name of refused) {
    const cleaned = rule.clean(name).slice(0, rule.max);
    let value = cleanedCount.get(cleaned) === 1 && !taken.has(cleaned) ? cleaned : hashed(rule, name);
    for (let n = 2; taken.has(value); n++) value = withSuffix(hashed(rule, name), `_${n}`, rule.max);
    taken.add(value);
    sent.set(name, value);
    delta.set(name, countTokens(value, encoding) - countTokens(name, encoding));
  }
  return { sent, delta };
}

export interface ProviderRulesResult {
  messages: AssembledMessage[];
  /** By source message id: what was changed in the payload, as sentences for its decision. */
  notes: Map<string, string[]>;
  /** Every identifier sent differently from how it is stored, once per (kind, original, sent). */
  mappings: ToolMapping[];
}

/**
 * Applies the format's rules to the final messages: tool names as `names` maps them; a call id
 * the format refuses gets a cleaned value with a hash of the original; an id used by an earlier
 * call of the context gets the first free suffix (`_2`, `_3`, …), in its call and in its round's
 * results. GEMINI results learn the (sent) name of the call they answer (`toolName`), which its
 * functionResponse names. ANTHROPIC_MESSAGES and GEMINI note the whitespace-only text blocks the
 * payload leaves out, ANTHROPIC_MESSAGES the final assistant whitespace it trims. Token counts are
 * not changed here: the names' difference was counted when the budget was fitted.
 */
export function applyProviderRules(input: readonly AssembledMessage[], format: ContextFormat, names: NameMap): ProviderRulesResult {
  const notes = new Map<string, string[]>();
  const mappings: ToolMapping[] = [];
  if (format === 'GENERIC') return { messages: [...input], notes, mappings };
  const rules = IDENTIFIER_RULES[format];
  const note = (m: AssembledMessage, text: string) => {
    if (m.sourceMessageId === null) return;
    const list = notes.get(m.sourceMessageId);
    if (!list) notes.set(m.sourceMessageId, [text]);
    else if (!list.includes(text)) list.push(text);
  };
  const mapped = new Set<string>();
  const record = (kind: ToolMapping['kind'], original: string, sent: string) => {
    const key = `${kind}\u0000${original}\u0000${sent}`;
    if (mapped.has(key)) return;
    mapped.add(key);
    mappings.push({ kind, original, sent });
  };
  const used = new Set<string>();
  // The round being answered: call id as stored → { id sent, name sent }.
  let round = new Map<string, { id: string; name: string }>();
  const messages = input.map((m) => {
    let parts: AssembledPart[] | null = null;
    if (m.role !== 'TOOL') round = new Map();
    for (let k = 0; k < m.parts.length; k++) {
      const p = m.parts[k];
      let out: AssembledPart = p;
      if (p.type === 'toolCall') {
        let id = p.callId;
        if (rules.id) {
          const base = rules.id.valid(p.callId) ? p.callId : hashed(rules.id, p.callId);
          id = base;
          for (let n = 2; used.has(id); n++) id = withSuffix(base, `_${n}`, rules.id.max);
          used.add(id);
          if (id !== p.callId) {
            const why =
              id === base ? `${format} call ids are ${rules.id.text}` : 'already used by an earlier call; providers need unique ids';
            note(m, `tool call id "${p.callId}" sent as "${id}" (${why})`);
            record('CALL_ID', p.callId, id);
          }
        }
        const name = names.sent.get(p.name) ?? p.name;
        if (name !== p.name) {
          note(m, `tool name "${p.name}" sent as "${name}" (${format} tool names are ${rules.name!.text})`);
          record('TOOL_NAME', p.name, name);
        }
        round.set(p.callId, { id, name });
        if (id !== p.callId || name !== p.name) out = { ...p, callId: id, name };
      } else if (p.type === 'toolResult') {
        const call = round.get(p.callId);
        const id = call?.id ?? p.callId;
        if (id !== p.callId) note(m, `its result for tool call id "${p.callId}" sent as "${id}"`);
        if (format === 'GEMINI') out = { ...p, toolName: call?.name ?? p.callId };
        else if (id !== p.callId) out = { ...p, callId: id };
      } else if (p.type === 'reasoning' || p.type === 'providerPart') {
        const why = leftOutBecause(format, p);
        if (why !== null) note(m, `its ${p.type === 'reasoning' ? 'reasoning' : `${p.provider} provider`} part is left out (${why})`);
      } else if (p.type === 'media') {
        if (format === 'ANTHROPIC_MESSAGES' && p.source.type === 'providerFile') {
          note(
            m,
            `its ${p.media === 'image' ? 'image' : 'PDF'} "${p.name}" is sent by Files API file id (send the request with the anthropic-beta header files-api-2025-04-14)`,
          );
        }
      } else if (
        p.type === 'text' &&
        startsWithUserTurn(format) &&
        !hasVisibleText(p.text) &&
        metaOf(p, 'google')?.thoughtSignature === undefined
      ) {
        note(m, `a whitespace-only text part is left out (${format === 'GEMINI' ? 'Gemini' : 'Anthropic'} refuses empty text parts)`);
      }
      if (out !== p) parts ??= m.parts.slice(0, k);
      if (parts) parts.push(out);
    }
    return parts ? { ...m, parts } : m;
  });
  if (format === 'ANTHROPIC_MESSAGES') {
    // The payload's last block belongs to the last message that sends content.
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (m.role === 'SYSTEM' || !sendsAnthropicContent(m.parts, format)) continue;
      const last = [...m.parts]
        .reverse()
        .find((p) => (p.type === 'text' ? hasVisibleText(p.text) : !isProviderData(p) || sends(format, p)));
      if (m.role === 'ASSISTANT' && last?.type === 'text' && last.text !== last.text.trimEnd()) {
        note(m, 'its trailing whitespace is trimmed (Anthropic refuses final assistant content ending in whitespace)');
      }
      break;
    }
  }
  return { messages, notes, mappings };
}
