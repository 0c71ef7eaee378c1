/**
 * OpenAI Chat Completions: request `messages` and a `ChatCompletion` response (its first choice).
 * Content given as an array keeps that form (`providerMetadata.openai.contentArray`); an assistant
 * message's `name` and `refusal` ride on its first part (`openai.message`).
 *
 * A user message's images and PDFs are attachments (media.ts): `image_url` with a base64 data URL
 * as data of the data URL's type, with an https URL as the URL (its `detail` in `openai.detail`);
 * `file` with `file_data` (a data URL) as data named by its `filename`, with `file_id` as an OpenAI
 * provider file. Every other non-text part (`input_audio`, an http URL, a type that is not an image
 * or a PDF, any part of a system, developer or tool message) is an OPENAI_CHAT provider part.
 */
import { mediaKindOf } from '../assembly/media-rules.js';
import { badInput } from '../errors.js';
import type { PartInput } from '../parts.js';
import type { MessageRole } from '../types.js';
import {
  array,
  at,
  count,
  isObject,
  type Json,
  MessageList,
  metadata,
  object,
  type ProviderRead,
  string,
  usageOf,
  without,
} from './common.js';
import { attachmentPart, fileId, givenName, httpsUrl, imageTypeOf, MediaNames, parseDataUrl } from './media.js';

const openaiMeta = (fields: Json, keep = false) => metadata('openai', fields, keep);

/**
 * An `image_url` or `file` content part as an attachment part, or null when it stays a provider
 * part (a source it does not read, a type that is not an image or a PDF, keys it cannot keep).
 */
function mediaPart(part: Json, where: string, names: MediaNames): PartInput | null {
  const chatExtra = without(part, ['type', part.type as string]);
  if (part.type === 'image_url') {
    if (!isObject(part.image_url)) return null;
    const image = part.image_url;
    const uWhere = at(at(where, 'image_url'), 'url');
    if (Object.keys(image).some((k) => k !== 'url' && k !== 'detail') || (image.detail !== undefined && typeof image.detail !== 'string'))
      return null;
    const meta = openaiMeta({ detail: image.detail, ...(chatExtra ? { chatExtra } : {}) });
    const url = string(image.url, uWhere);
    const inline = parseDataUrl(url);
    if (inline !== null) {
      if (mediaKindOf(inline.mimeType) !== 'image') return null;
      return attachmentPart(
        names.next('image', inline.mimeType, null),
        inline.mimeType,
        { data: inline.data, where: uWhere },
        uWhere,
        meta,
      );
    }
    const https = httpsUrl(url);
    if (https === null) return null;
    const mimeType = imageTypeOf(https);
    return attachmentPart(names.next('image', mimeType, null), mimeType, { url: https }, uWhere, meta);
  }
  if (part.type === 'file') {
    if (!isObject(part.file)) return null;
    const file = part.file;
    const fWhere = at(where, 'file');
    if (Object.keys(file).some((k) => !['file_data', 'file_id', 'filename'].includes(k))) return null;
    const meta = openaiMeta(chatExtra ? { chatExtra } : {});
    const filename = givenName(file.filename);
    if (typeof file.file_data === 'string' && file.file_id === undefined) {
      // A file name that cannot be the attachment's name would be lost: the part stays as given.
      if (file.filename !== undefined && filename === null) return null;
      const dWhere = at(fWhere, 'file_data');
      const inline = parseDataUrl(file.file_data);
      // A PDF only: an image given as a file would go back as an image_url part.
      if (inline === null || inline.mimeType !== 'application/pdf') return null;
      return attachmentPart(
        names.next('document', inline.mimeType, filename),
        inline.mimeType,
        { data: inline.data, where: dWhere },
        dWhere,
        meta,
      );
    }
    const id = fileId(file.file_id);
    if (id === null || file.file_data !== undefined || file.filename !== undefined) return null;
    return attachmentPart(
      names.next('document', 'application/pdf', null),
      'application/pdf',
      { providerFile: { provider: 'openai', fileId: id } },
      fWhere,
      meta,
    );
  }
  return null;
}

/**
 * Text and other parts of a message's `content` (a string or an array of parts); `names` when its
 * images and PDFs are read as attachments (a user message's).
 */
function contentParts(content: unknown, where: string, first: Json, names: MediaNames | null = null): PartInput[] {
  if (typeof content === 'string') return [{ text: { text: content, providerMetadata: openaiMeta(first) } }];
  const parts = array(content, where).map((p, i): PartInput => {
    const part = object(p, at(where, i));
    if (part.type === 'text') {
      const extra = without(part, ['type', 'text']);
      return {
        text: { text: string(part.text, at(at(where, i), 'text')), providerMetadata: openaiMeta(extra ? { chatExtra: extra } : {}) },
      };
    }
    string(part.type, at(at(where, i), 'type'));
    const media = names === null ? null : mediaPart(part, at(where, i), names);
    return media ?? { providerPart: { provider: 'openai', data: part, format: 'OPENAI_CHAT' } };
  });
  return withFirst(parts, { ...first, contentArray: true });
}

/** `fields` added to the first part's openai metadata. */
function withFirst(parts: PartInput[], fields: Json): PartInput[] {
  if (parts.length === 0 || Object.keys(fields).length === 0) return parts;
  const [key, body] = Object.entries(parts[0])[0] as [keyof PartInput, { providerMetadata?: Json }];
  const openai = isObject(body.providerMetadata?.openai) ? body.providerMetadata.openai : {};
  return [
    { [key]: { ...body, providerMetadata: { ...body.providerMetadata, openai: { ...openai, ...fields } } } } as PartInput,
    ...parts.slice(1),
  ];
}

function toolCalls(value: unknown, where: string): PartInput[] {
  return array(value, where).map((c, i) => {
    const call = object(c, at(where, i));
    const fn = object(call.function, at(at(where, i), 'function'));
    const extra = without(call, ['id', 'type', 'function']);
    return {
      toolCall: {
        callId: string(call.id, at(at(where, i), 'id')),
        name: string(fn.name, at(at(at(where, i), 'function'), 'name')),
        argumentsJson: string(fn.arguments, at(at(at(where, i), 'function'), 'arguments')),
        providerMetadata: openaiMeta(extra ? { chatExtra: extra } : {}),
      },
    };
  });
}

/** One assistant message (a request's, or a response's choice): text, calls, and request keys kept. */
function assistantParts(message: Json, where: string, response: boolean): PartInput[] {
  const kept: Json = {};
  if (typeof message.name === 'string') kept.name = message.name;
  if (typeof message.refusal === 'string') kept.refusal = message.refusal;
  const first: Json = Object.keys(kept).length > 0 ? { message: kept } : {};
  // A message of tool calls only is sent with `content: null` unless it had no `content` key at all.
  if (!('content' in message)) first.noContent = true;
  // Response-only keys are kept, not sent (a request's assistant message does not take them).
  if (response && Array.isArray(message.annotations) && message.annotations.length > 0) first.annotations = message.annotations;
  const content = message.content === null || message.content === undefined ? [] : contentParts(message.content, at(where, 'content'), {});
  const calls =
    message.tool_calls === undefined || message.tool_calls === null ? [] : toolCalls(message.tool_calls, at(where, 'tool_calls'));
  const parts = [...content, ...calls];
  if (parts.length === 0) parts.push({ text: { text: '' } });
  return withFirst(parts, first);
}

const ROLES: Record<string, MessageRole> = { system: 'SYSTEM', developer: 'SYSTEM', user: 'USER' };

/** Reads request `messages` (or a request body holding them). */
export function readChatMessages(value: unknown, where: string): ProviderRead {
  let items = value;
  if (isObject(value)) {
    items = value.messages;
    where = at(where, 'messages');
  }
  const list = new MessageList();
  for (const [i, m] of array(items, where).entries()) {
    const mWhere = at(where, i);
    const message = object(m, mWhere);
    const role = message.role;
    if (role === 'assistant') {
      for (const part of assistantParts(message, mWhere, false)) list.add('ASSISTANT', part);
      list.flush();
    } else if (role === 'tool') {
      const content = message.content;
      const text =
        typeof content === 'string'
          ? content
          : contentParts(content, at(mWhere, 'content'), {})
              .map((p) => p.text?.text ?? '')
              .join('\n');
      const meta = Array.isArray(content) ? openaiMeta({ content }) : undefined;
      list.add('TOOL', {
        toolResult: { callId: string(message.tool_call_id, at(mWhere, 'tool_call_id')), content: text, providerMetadata: meta },
      });
    } else if (typeof role === 'string' && ROLES[role]) {
      const first = role === 'developer' ? { role } : {};
      const names = role === 'user' ? new MediaNames() : null;
      for (const part of contentParts(message.content, at(mWhere, 'content'), first, names)) list.add(ROLES[role], part);
      list.flush();
    } else throw badInput(`${at(mWhere, 'role')} must be system, developer, user, assistant or tool.`);
  }
  return { messages: list.done(where), usage: null };
}

/** Reads a `ChatCompletion`: its first choice's message, and its usage. */
export function readChatResponse(value: unknown, where: string): ProviderRead {
  const response = object(value, where);
  const choices = array(response.choices, at(where, 'choices'));
  if (choices.length === 0) throw badInput(`${at(where, 'choices')} is empty: nothing to store.`);
  const cWhere = at(at(where, 'choices'), 0);
  const message = object(object(choices[0], cWhere).message, at(cWhere, 'message'));
  const list = new MessageList();
  for (const part of assistantParts(message, at(cWhere, 'message'), true)) list.add('ASSISTANT', part);
  const usage = isObject(response.usage) ? response.usage : {};
  const cached = isObject(usage.prompt_tokens_details) ? count(usage.prompt_tokens_details.cached_tokens) : 0;
  return {
    messages: list.done(cWhere),
    usage: usageOf(
      {
        inputTokens: Math.max(0, count(usage.prompt_tokens) - cached),
        outputTokens: count(usage.completion_tokens),
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      response.model,
      response.id,
    ),
  };
}
