/**
 * The providers' documented request rules that stored data may break, and what assembly does about
 * each (the decisions are listed in formats.ts, "PROVIDER RULES").
 *
 * Runs on the assembled messages of OPENAI_CHAT and ANTHROPIC_MESSAGES contexts, right before the
 * payload is built, so the messages shown and the payload agree. GENERIC is not a provider's wire
 * shape: it keeps the stored ids and names.
 */
import { createHash } from 'node:crypto';
import { countTokens } from '../tokens.js';
import type { TokenEncoding } from '../types.js';
import type { AssembledMessage, AssembledPart, ContextFormat } from './types.js';

/** Anthropic's `tool_use.id` rule (OpenAI accepts these too). Refused at write time (parts.ts). */
export const TOOL_CALL_ID_PATTERN = /^[a-zA-Z0-9_-]+$/;
/** Anthropic's tool name rule; OpenAI's function-name rule is the same. Refused at write time (parts.ts). */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

const shortHash = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 8);

/**
 * A valid stand-in for an id no provider accepts (stored before write-time checks): every other
 * character becomes `_`, and a hash of the original keeps two different ids different.
 */
export function safeCallId(id: string): string {
  if (TOOL_CALL_ID_PATTERN.test(id)) return id;
  return `${id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 200)}_${shortHash(id)}`;
}

/** A valid stand-in for a tool name no provider accepts: cleaned, cut to 55, and a hash (64 at most). */
export function safeToolName(name: string): string {
  if (TOOL_NAME_PATTERN.test(name)) return name;
  return `${name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55)}_${shortHash(name)}`;
}

/** Whether a text is sent as an Anthropic text block (the API refuses whitespace-only ones). */
export const hasVisibleText = (text: string) => /\S/.test(text);

/** Whether a message gives at least one Anthropic content block (it is a turn of the payload). */
export function sendsAnthropicContent(parts: readonly { type: string; text?: string }[]): boolean {
  return parts.some((p) => p.type !== 'text' || hasVisibleText(p.text ?? ''));
}

export interface ProviderRulesResult {
  messages: AssembledMessage[];
  /** By source message id: what was changed in the payload, as sentences for its decision. */
  notes: Map<string, string[]>;
}

/**
 * Maps what the provider would refuse, deterministically: a call id repeated in a later round gets
 * a suffix (`_2`, `_3`, … the first free one) in that round's call and results; an id or a tool
 * name outside the providers' patterns gets its stand-in. For ANTHROPIC_MESSAGES it also notes the
 * whitespace-only text blocks and the final assistant whitespace the payload leaves out.
 */
export function applyProviderRules(
  input: readonly AssembledMessage[],
  format: ContextFormat,
  encoding: TokenEncoding,
): ProviderRulesResult {
  const notes = new Map<string, string[]>();
  if (format === 'GENERIC') return { messages: [...input], notes };
  const note = (m: AssembledMessage, text: string) => {
    if (m.sourceMessageId === null) return;
    const list = notes.get(m.sourceMessageId);
    if (list) list.push(text);
    else notes.set(m.sourceMessageId, [text]);
  };
  const used = new Set<string>();
  let round = new Map<string, string>();
  const messages = input.map((m) => {
    let parts: AssembledPart[] | null = null;
    let tokenDelta = 0;
    if (m.role !== 'TOOL') round = new Map();
    for (let k = 0; k < m.parts.length; k++) {
      const p = m.parts[k];
      let mapped: AssembledPart = p;
      if (p.type === 'toolCall') {
        let id = safeCallId(p.callId);
        if (used.has(id)) {
          let n = 2;
          while (used.has(`${id}_${n}`)) n++;
          id = `${id}_${n}`;
        }
        used.add(id);
        round.set(p.callId, id);
        const name = safeToolName(p.name);
        if (id !== p.callId) {
          note(
            m,
            id === safeCallId(p.callId)
              ? `tool call id "${p.callId}" is sent as "${id}" (not a valid provider id)`
              : `tool call id "${p.callId}" is sent as "${id}" (already used by an earlier call; providers need unique ids)`,
          );
        }
        if (name !== p.name) {
          note(m, `tool name "${p.name}" is sent as "${name}" (not a valid provider tool name)`);
          if (format === 'OPENAI_CHAT') tokenDelta += countTokens(name, encoding) - countTokens(p.name, encoding);
        }
        if (id !== p.callId || name !== p.name) mapped = { ...p, callId: id, name };
      } else if (p.type === 'toolResult') {
        const id = round.get(p.callId) ?? safeCallId(p.callId);
        if (id !== p.callId) mapped = { ...p, callId: id };
      } else if (format === 'ANTHROPIC_MESSAGES' && !hasVisibleText(p.text)) {
        note(m, 'a whitespace-only text part is left out (Anthropic refuses whitespace-only text blocks)');
      }
      if (mapped !== p) {
        parts ??= m.parts.slice(0, k);
      }
      if (parts) parts.push(mapped);
    }
    return parts ? { ...m, parts, tokenCount: m.tokenCount + tokenDelta } : m;
  });
  if (format === 'ANTHROPIC_MESSAGES') {
    // The payload's last block belongs to the last message that sends content.
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (m.role === 'SYSTEM' || !sendsAnthropicContent(m.parts)) continue;
      const last = [...m.parts].reverse().find((p) => p.type !== 'text' || hasVisibleText(p.text));
      if (m.role === 'ASSISTANT' && last?.type === 'text' && last.text !== last.text.trimEnd()) {
        note(m, 'its trailing whitespace is trimmed (Anthropic refuses final assistant content ending in whitespace)');
      }
      break;
    }
  }
  return { messages, notes };
}
