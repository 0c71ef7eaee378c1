/**
 * The recorded provider payloads under test/fixtures/providers (README.md there names each one's
 * source), read the way appendProviderMessages reads them, and what assembling them back in their
 * own format must give: the same items, with the normalizations docs/provider-replay.md lists.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEADING_USER_TEXT } from '../../src/domain/assembly/formats.js';
import type { ContextFormat } from '../../src/domain/assembly/types.js';
import { textCaps } from '../../src/domain/limits.js';
import { draftMessage, type MessageInputData } from '../../src/domain/parts.js';
import { readProviderPayload } from '../../src/domain/provider-messages/index.js';
import type { DomainMessage, StoredPart } from '../../src/domain/types.js';

export type ProviderFormat = Exclude<ContextFormat, 'GENERIC'>;
type Json = Record<string, unknown>;

export interface ProviderFixture {
  file: string;
  format: ProviderFormat;
  kind: 'request' | 'response';
  body: Json;
}

const ROOT = new URL('../fixtures/providers/', import.meta.url).pathname;

export function providerFixtures(): ProviderFixture[] {
  const out: ProviderFixture[] = [];
  for (const dir of readdirSync(ROOT, { withFileTypes: true })) {
    if (!dir.isDirectory()) continue;
    for (const name of readdirSync(join(ROOT, dir.name)).sort()) {
      const fixture = JSON.parse(readFileSync(join(ROOT, dir.name, name), 'utf8')) as Omit<ProviderFixture, 'file'>;
      out.push({ ...fixture, file: `${dir.name}/${name}` });
    }
  }
  return out;
}

/** A user message put before a response's messages: a context needs one to answer. */
export const OPENING: MessageInputData = { role: 'USER', text: 'Hello.' };

/** The fixture's messages as appendProviderMessages would store them (parts through JSON, as jsonb returns them). */
export function storedMessages(fixture: ProviderFixture): DomainMessage[] {
  const side = fixture.kind === 'request' ? 'messages' : 'response';
  const read = readProviderPayload(fixture.format, side, fixture.body, `input.${side}`);
  // A response's calls are answered after it (assembly never sends a call without its result).
  const callIds = read.messages.flatMap((m) => (m.parts ?? []).flatMap((p) => (p.toolCall ? [p.toolCall.callId] : [])));
  const answers: MessageInputData[] =
    fixture.kind === 'response' && callIds.length > 0
      ? [{ role: 'TOOL', parts: callIds.map((callId) => ({ toolResult: { callId, content: 'ok' } })) }]
      : [];
  const inputs = fixture.kind === 'response' ? [OPENING, ...read.messages, ...answers] : read.messages;
  return inputs.map((input, index) => {
    const draft = draftMessage(input, `input.messages[${index}]`, textCaps(1024 * 1024));
    const parts = JSON.parse(JSON.stringify(draft.parts)) as StoredPart[];
    return { id: `m${index}`, index, role: draft.role, parts, generating: false, tokens: null };
  });
}

const stripKey = (value: unknown, key: string): unknown => {
  if (Array.isArray(value)) return value.map((v) => stripKey(v, key));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Json).flatMap(([k, v]) => (k === key ? [] : [[k, stripKey(v, key)]])));
};

/** An Anthropic message without the cache_control marks assembly places (docs/provider-replay.md). */
function unmarked(message: Json): Json {
  const content = message.content;
  if (!Array.isArray(content) || !content.some((b) => (b as Json).cache_control !== undefined)) return message;
  return { ...message, content: stripKey(content, 'cache_control') };
}

/** What a response is as request items of its own format. */
function responseItems(fixture: ProviderFixture): unknown[] {
  const body = fixture.body;
  switch (fixture.format) {
    case 'ANTHROPIC_MESSAGES':
      return [{ content: (body.content as Json[]).filter(visible), role: 'assistant' }];
    case 'OPENAI_CHAT': {
      const message = (body.choices as Json[])[0].message as Json;
      const item: Json = { content: message.content ?? null, role: 'assistant' };
      if (message.tool_calls) item.tool_calls = message.tool_calls;
      if (typeof message.refusal === 'string') item.refusal = message.refusal;
      return [item];
    }
    case 'OPENAI_RESPONSES':
      return body.output as unknown[];
    case 'GEMINI': {
      const content = (body.candidates as Json[])[0].content as Json;
      return [{ ...content, role: 'model' }];
    }
  }
}

/**
 * The items a fixture's messages must assemble back to in its own format, normalized as
 * docs/provider-replay.md says: Anthropic `cache_control` is not kept; a Responses message item
 * without `type` gets `type: "message"`, and a reasoning item's plain `content` is not sent (the
 * API refuses it in input); a Gemini content without `role` is a user turn.
 */
export function expectedItems(fixture: ProviderFixture): unknown[] {
  if (fixture.kind === 'response') return responseItems(fixture);
  const body = fixture.body;
  switch (fixture.format) {
    case 'ANTHROPIC_MESSAGES': {
      const messages = (stripKey(body.messages, 'cache_control') as Json[]).map((m) =>
        typeof m.content === 'string' ? m : { ...m, content: (m.content as Json[]).filter(visible) },
      );
      return leadingUserTurn(mergeTurns(messages, 'content'), 'content');
    }
    case 'OPENAI_CHAT':
      return body.messages as unknown[];
    case 'OPENAI_RESPONSES': {
      const input = typeof body.input === 'string' ? [{ content: body.input, role: 'user', type: 'message' }] : (body.input as Json[]);
      const items = input.map((item) => {
        if (item.type === undefined) return { ...item, type: 'message' };
        if (item.type === 'reasoning') return stripKey(item, 'content');
        return item;
      });
      return typeof body.instructions === 'string' ? [{ content: body.instructions, role: 'system', type: 'message' }, ...items] : items;
    }
    case 'GEMINI': {
      const contents = (body.contents as Json[]).map((c) => ({
        role: 'user',
        ...c,
        parts: (c.parts as Json[]).filter((p) => typeof p.text !== 'string' || /\S/.test(p.text) || p.thoughtSignature !== undefined),
      }));
      return leadingUserTurn(
        mergeTurns(
          contents.filter((c) => c.parts.length > 0),
          'parts',
        ),
        'parts',
      );
    }
  }
}

/** Whether an Anthropic block is sent: whitespace-only text blocks are not (the API refuses them). */
const visible = (block: Json) => block.type !== 'text' || /\S/.test(String(block.text));

/** A conversation that opens with the model's turn gets the placeholder user turn first (Anthropic and Gemini start with a user turn). */
function leadingUserTurn(turns: Json[], key: 'content' | 'parts'): Json[] {
  if (turns.length === 0 || turns[0].role === 'user') return turns;
  const text = key === 'content' ? { text: LEADING_USER_TEXT, type: 'text' } : { text: LEADING_USER_TEXT };
  return [{ [key]: [text], role: 'user' }, ...turns];
}

/**
 * Consecutive turns of one role as one (Anthropic and Gemini alternate roles: the formats merge
 * them), a string content as one text block when merged.
 */
function mergeTurns(turns: Json[], key: 'content' | 'parts'): Json[] {
  const out: Json[] = [];
  const list = (v: unknown) => (typeof v === 'string' ? [{ text: v, type: 'text' }] : (v as unknown[]));
  for (const turn of turns) {
    const last = out[out.length - 1];
    if (last && last.role === turn.role) out[out.length - 1] = { ...last, [key]: [...list(last[key]), ...list(turn[key])] };
    else out.push(turn);
  }
  return out;
}

/** The items of an assembled payload of `format` (system blocks of the request folded as the format folds them). */
export function payloadItems(format: ProviderFormat, payload: Json): unknown[] {
  switch (format) {
    case 'ANTHROPIC_MESSAGES':
      return (payload.messages as Json[]).map(unmarked);
    case 'OPENAI_CHAT':
      return payload.messages as unknown[];
    case 'OPENAI_RESPONSES':
      return payload.input as unknown[];
    case 'GEMINI':
      return payload.contents as unknown[];
  }
}
