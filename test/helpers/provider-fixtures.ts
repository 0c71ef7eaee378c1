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
import { type DraftPart, draftMessage, type MessageInputData } from '../../src/domain/parts.js';
import { readProviderPayload } from '../../src/domain/provider-messages/index.js';
import type { DomainMessage, ResolvedAttachment, StoredPart } from '../../src/domain/types.js';

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

/** Messages as stored and the attachments their parts refer to, as assembly resolves them (bytes loaded). */
export interface StoredConversation {
  messages: DomainMessage[];
  attachments: ResolvedAttachment[];
}

/**
 * A checked attachment as the service stores it (message-appends.ts `storeAttachment`): the part
 * that refers to it and the attachment as assembly reads it back.
 */
function stored(
  upload: Extract<DraftPart, { type: 'attachmentUpload' }>,
  id: string,
): { part: StoredPart; attachment: ResolvedAttachment } {
  const { type: _type, kind, providerMetadata, ...rest } = upload;
  const ref = { type: 'attachment' as const, attachmentId: id, name: upload.name, mimeType: upload.mimeType };
  const meta = providerMetadata === undefined ? {} : { providerMetadata };
  const base = { id, name: upload.name, mimeType: upload.mimeType };
  switch (kind) {
    case 'TEXT': {
      const size = Buffer.byteLength(upload.content, 'utf8');
      return { part: { ...ref, size, ...meta }, attachment: { ...base, size, content: upload.content } };
    }
    case 'BYTES': {
      const dims = { width: upload.width, height: upload.height, pages: upload.pages };
      const defined = Object.fromEntries(Object.entries(dims).filter(([, v]) => v !== undefined));
      const size = upload.bytes.length;
      return {
        part: { ...ref, size, kind, ...defined, ...meta },
        attachment: { ...base, size, content: null, kind, bytes: upload.bytes, ...defined },
      };
    }
    case 'URL':
      return {
        part: { ...ref, size: 0, kind, url: upload.url, ...meta },
        attachment: { ...base, size: 0, content: null, kind, url: upload.url },
      };
    case 'PROVIDER_FILE': {
      const providerFile = (rest as { providerFile: ResolvedAttachment['providerFile'] }).providerFile!;
      return {
        part: { ...ref, size: 0, kind, providerFile, ...meta },
        attachment: { ...base, size: 0, content: null, kind, providerFile },
      };
    }
  }
}

/** Inputs as appendMessages would store them (parts through JSON, as jsonb returns them; attachments stored). */
export function storeInputs(inputs: MessageInputData[]): StoredConversation {
  const attachments: ResolvedAttachment[] = [];
  const messages = inputs.map((input, index) => {
    const draft = draftMessage(input, `input.messages[${index}]`, textCaps(1024 * 1024));
    const parts = draft.parts.map((part, k): StoredPart => {
      if (part.type !== 'attachmentUpload') return part;
      const kept = stored(part, `att_${index}_${k}`);
      attachments.push(kept.attachment);
      return kept.part;
    });
    return {
      id: `m${index}`,
      index,
      role: draft.role,
      parts: JSON.parse(JSON.stringify(parts)) as StoredPart[],
      generating: false,
      tokens: null,
    };
  });
  return { messages, attachments };
}

/** A provider payload appended as appendProviderMessages would store it. */
export function storedPayload(format: ProviderFormat, kind: 'request' | 'response', body: unknown): StoredConversation {
  const side = kind === 'request' ? 'messages' : 'response';
  const read = readProviderPayload(format, side, body, `input.${side}`);
  // A response's calls are answered after it (assembly never sends a call without its result).
  const callIds = read.messages.flatMap((m) => (m.parts ?? []).flatMap((p) => (p.toolCall ? [p.toolCall.callId] : [])));
  const answers: MessageInputData[] =
    kind === 'response' && callIds.length > 0
      ? [{ role: 'TOOL', parts: callIds.map((callId) => ({ toolResult: { callId, content: 'ok' } })) }]
      : [];
  return storeInputs(kind === 'response' ? [OPENING, ...read.messages, ...answers] : read.messages);
}

/** The fixture's messages as appendProviderMessages would store them, and their attachments. */
export const storedMessages = (fixture: ProviderFixture): StoredConversation => storedPayload(fixture.format, fixture.kind, fixture.body);

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
 * API refuses it in input); an OpenAI image without `detail` gets `auto`; a Gemini content without
 * `role` is a user turn, and its inline data is sent as standard base64.
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
      return (body.messages as Json[]).map((m) => (m.role === 'user' ? withDetail(m) : m));
    case 'OPENAI_RESPONSES': {
      const input = typeof body.input === 'string' ? [{ content: body.input, role: 'user', type: 'message' }] : (body.input as Json[]);
      const items = input.map((item) => {
        if (item.type === undefined) return withDetail({ ...item, type: 'message' });
        if (item.type === 'reasoning') return stripKey(item, 'content');
        return withDetail(item);
      });
      return typeof body.instructions === 'string' ? [{ content: body.instructions, role: 'system', type: 'message' }, ...items] : items;
    }
    case 'GEMINI': {
      const contents = (body.contents as Json[]).map((c) => ({
        role: 'user',
        ...c,
        parts: (c.parts as Json[])
          .filter((p) => typeof p.text !== 'string' || /\S/.test(p.text) || p.thoughtSignature !== undefined)
          .map((p) => (c.role === 'model' ? p : standardInlineData(p))),
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

/** Images as OpenAI takes them back: an `image_url` or `input_image` without `detail` gets `detail: "auto"` (the default, which the Responses SDK type requires). */
function withDetail(value: Json): Json {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o = v as Json;
    if (o.type === 'input_image' && o.detail === undefined) return { ...o, detail: 'auto' };
    if (o.type === 'image_url' && o.image_url && typeof o.image_url === 'object' && (o.image_url as Json).detail === undefined)
      return { ...o, image_url: { ...(o.image_url as Json), detail: 'auto' } };
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, walk(x)]));
  };
  return walk(value) as Json;
}

/** A user turn's `inlineData` as it is sent back: its base64 in the standard alphabet, padded (Gemini takes either). */
function standardInlineData(part: Json): Json {
  const inline = part.inlineData as Json | undefined;
  if (!inline || typeof inline.data !== 'string') return part;
  return { ...part, inlineData: { ...inline, data: Buffer.from(inline.data, 'base64url').toString('base64') } };
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
