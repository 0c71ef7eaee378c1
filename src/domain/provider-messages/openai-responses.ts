/**
 * OpenAI Responses: request `input` items and a `Response` (its `output` items). Items of one side
 * in a row are one message: the model's (reasoning, assistant messages, function calls, built-in
 * tool calls) an ASSISTANT message, function call outputs a TOOL message. Each part keeps its
 * item's id (`openai.itemId`) and the item's other keys (`openai.item` on its first part,
 * `openai.extra` per content part or call); item types the parts do not model are OPENAI_RESPONSES
 * provider parts.
 *
 * A user message's `input_image` and `input_file` (a PDF) parts are attachments (media.ts):
 * `image_url` / `file_data` as a base64 data URL as data, an https `image_url` / `file_url` as the
 * URL, `file_id` as an OpenAI provider file; an image's `detail` in `openai.detail`, a file's
 * `filename` as its name. Those in a function_call_output's `output` list are attachments of the
 * TOOL message after that result; the output kept for OpenAI holds a marker where each was. Parts
 * it does not read so (another file type, an http URL, a system message's) stay provider parts.
 */
import { mediaKindOf } from '../assembly/media-rules.js';
import { mediaMarker } from '../assembly/payload-pieces.js';
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
  optionalString,
  type ProviderRead,
  usageOf,
  string,
  without,
} from './common.js';
import { attachmentPart, fileId, givenName, httpsUrl, imageTypeOf, MediaNames, parseDataUrl, typeOfName } from './media.js';

const openaiMeta = (fields: Json) => metadata('openai', fields, false);

const extraOf = (value: Json, modeled: readonly string[]) => {
  const extra = without(value, modeled);
  return extra ? { extra } : {};
};

/**
 * An `input_image` or `input_file` part as an attachment part, or null when it stays a provider
 * part: a source it does not read, a file that is not a PDF, keys it cannot keep.
 */
function mediaPart(part: Json, where: string, names: MediaNames, fields: Json = {}): PartInput | null {
  if (part.type === 'input_image') {
    if (part.detail !== undefined && typeof part.detail !== 'string') return null;
    const extra = without(part, ['type', 'image_url', 'file_id', 'detail']);
    const meta = openaiMeta({ ...fields, detail: part.detail, ...(extra ? { extra } : {}) });
    const uWhere = at(where, 'image_url');
    if (typeof part.image_url === 'string' && part.file_id === undefined) {
      const inline = parseDataUrl(part.image_url);
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
      const url = httpsUrl(part.image_url);
      if (url === null) return null;
      const mimeType = imageTypeOf(url);
      return attachmentPart(names.next('image', mimeType, null), mimeType, { url }, uWhere, meta);
    }
    const id = fileId(part.file_id);
    if (id === null || part.image_url !== undefined) return null;
    const mimeType = imageTypeOf();
    return attachmentPart(names.next('image', mimeType, null), mimeType, { providerFile: { provider: 'openai', fileId: id } }, where, meta);
  }
  if (part.type !== 'input_file') return null;
  const sources = ['file_data', 'file_url', 'file_id'].filter((k) => part[k] !== undefined);
  if (sources.length !== 1) return null;
  const filename = givenName(part.filename);
  // A file name that cannot be the attachment's name would be lost: the part stays as given.
  if (part.filename !== undefined && filename === null) return null;
  const sWhere = at(where, sources[0]);
  if (sources[0] === 'file_data') {
    const extra = without(part, ['type', 'file_data', 'filename']);
    const inline = typeof part.file_data === 'string' ? parseDataUrl(part.file_data) : null;
    if (inline === null || inline.mimeType !== 'application/pdf') return null;
    const meta = openaiMeta({ ...fields, ...(extra ? { extra } : {}) });
    return attachmentPart(
      names.next('document', inline.mimeType, filename),
      inline.mimeType,
      { data: inline.data, where: sWhere },
      sWhere,
      meta,
    );
  }
  // By URL or file id, the builder sends no file name: a given one is kept with the part's other keys.
  const extra = without(part, ['type', sources[0]]);
  const meta = openaiMeta({ ...fields, ...(extra ? { extra } : {}) });
  if (sources[0] === 'file_url') {
    const url = httpsUrl(part.file_url);
    if (url === null || (typeOfName(filename ?? undefined) ?? typeOfName(url) ?? 'application/pdf') !== 'application/pdf') return null;
    return attachmentPart(names.next('document', 'application/pdf', filename), 'application/pdf', { url }, sWhere, meta);
  }
  const id = fileId(part.file_id);
  if (id === null || (typeOfName(filename ?? undefined) ?? 'application/pdf') !== 'application/pdf') return null;
  return attachmentPart(
    names.next('document', 'application/pdf', filename),
    'application/pdf',
    { providerFile: { provider: 'openai', fileId: id } },
    sWhere,
    meta,
  );
}

/** The parts of a message item: its content parts, the item's own keys on the first. */
function messageParts(item: Json, where: string, assistant: boolean): PartInput[] {
  const itemId = optionalString(item.id, at(where, 'id'));
  const itemKeys = without(item, ['type', 'role', 'content', 'id']);
  const first: Json = { ...(itemKeys ? { item: itemKeys } : {}) };
  if (item.role === 'developer') first.role = 'developer';
  const cWhere = at(where, 'content');
  const names = item.role === 'user' ? new MediaNames() : null;
  if (typeof item.content === 'string') return [{ text: { text: item.content, providerMetadata: openaiMeta({ ...first, itemId }) } }];
  const parts = array(item.content, cWhere).map((c, i): PartInput => {
    const part = object(c, at(cWhere, i));
    const pWhere = at(cWhere, i);
    if (part.type === 'input_text' || part.type === 'output_text') {
      return {
        text: { text: string(part.text, at(pWhere, 'text')), providerMetadata: openaiMeta({ itemId, ...extraOf(part, ['type', 'text']) }) },
      };
    }
    if (part.type === 'refusal' && assistant) {
      return { text: { text: string(part.refusal, at(pWhere, 'refusal')), providerMetadata: openaiMeta({ itemId }) } };
    }
    string(part.type, at(pWhere, 'type'));
    if (assistant)
      throw badInput(`${at(pWhere, 'type')} "${part.type}" is not an assistant message content part (output_text or refusal).`);
    const media = names === null ? null : mediaPart(part, pWhere, names, { itemId });
    return media ?? { providerPart: { provider: 'openai', data: part, format: 'OPENAI_RESPONSES' } };
  });
  if (parts.length === 0) parts.push({ text: { text: '', providerMetadata: openaiMeta({ itemId }) } });
  const [key, body] = Object.entries(parts[0])[0] as [keyof PartInput, { providerMetadata?: Json }];
  const openai = isObject(body.providerMetadata?.openai) ? body.providerMetadata.openai : {};
  parts[0] = {
    [key]: { ...body, providerMetadata: { openai: { ...openai, ...first, ...(assistant ? {} : { contentArray: true }) } } },
  } as PartInput;
  return parts;
}

function reasoningPart(item: Json, where: string): PartInput {
  const summary = item.summary === undefined ? [] : array(item.summary, at(where, 'summary'));
  const texts = summary.map((s, i) => string(object(s, at(at(where, 'summary'), i)).text, at(at(at(where, 'summary'), i), 'text')));
  const plain =
    summary.length === 1 && Object.keys(object(summary[0], at(at(where, 'summary'), 0))).every((k) => k === 'type' || k === 'text');
  const fields: Json = {
    itemId: optionalString(item.id, at(where, 'id')),
    encryptedContent: optionalString(item.encrypted_content, at(where, 'encrypted_content')),
    ...(plain || summary.length === 0 ? {} : { summary }),
    // Plain reasoning text is kept, not sent: the API refuses it in input.
    ...(item.content === undefined || item.content === null ? {} : { content: item.content }),
    ...extraOf(item, ['type', 'id', 'summary', 'encrypted_content', 'content']),
  };
  return { reasoning: { text: texts.join('\n\n'), providerMetadata: openaiMeta(fields) } };
}

/** One item: the role of the message it belongs to and its parts. */
function itemParts(item: Json, where: string): { role: MessageRole; parts: PartInput[]; own: boolean } {
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message': {
      const role = item.role;
      if (role === 'assistant') return { role: 'ASSISTANT', parts: messageParts(item, where, true), own: false };
      if (role === 'user') return { role: 'USER', parts: messageParts(item, where, false), own: true };
      if (role === 'system' || role === 'developer') return { role: 'SYSTEM', parts: messageParts(item, where, false), own: true };
      throw badInput(`${at(where, 'role')} must be user, assistant, system or developer.`);
    }
    case 'reasoning':
      return { role: 'ASSISTANT', parts: [reasoningPart(item, where)], own: false };
    case 'function_call':
      return {
        role: 'ASSISTANT',
        own: false,
        parts: [
          {
            toolCall: {
              callId: string(item.call_id, at(where, 'call_id')),
              name: string(item.name, at(where, 'name')),
              argumentsJson: string(item.arguments, at(where, 'arguments')),
              providerMetadata: openaiMeta({
                itemId: optionalString(item.id, at(where, 'id')),
                ...extraOf(item, ['type', 'id', 'call_id', 'name', 'arguments']),
              }),
            },
          },
        ],
      };
    case 'function_call_output': {
      const output = item.output;
      const oWhere = at(where, 'output');
      // Its images and PDFs become attachments after it; the output kept marks where they were.
      const media: PartInput[] = [];
      const names = new MediaNames();
      const kept =
        typeof output === 'string'
          ? undefined
          : array(output, oWhere).map((p, i) => {
              const part = mediaPart(object(p, at(oWhere, i)), at(oWhere, i), names);
              if (part === null) return p;
              media.push(part);
              return mediaMarker();
            });
      const content =
        typeof output === 'string'
          ? output
          : array(output, oWhere)
              .flatMap((p, i) => {
                const part = object(p, at(oWhere, i));
                return part.type === 'input_text' ? [string(part.text, at(at(oWhere, i), 'text'))] : [];
              })
              .join('\n');
      const fields = {
        itemId: optionalString(item.id, at(where, 'id')),
        ...(kept ? { output: kept } : {}),
        ...extraOf(item, ['type', 'id', 'call_id', 'output']),
      };
      return {
        role: 'TOOL',
        own: false,
        parts: [
          { toolResult: { callId: string(item.call_id, at(where, 'call_id')), content, providerMetadata: openaiMeta(fields) } },
          ...media,
        ],
      };
    }
    default: {
      string(type, at(where, 'type'));
      // Built-in tool calls are the model's; what answers one (`…_output`, an approval) is the client's.
      const role: MessageRole = /_output$|_response$/.test(String(type)) ? 'USER' : 'ASSISTANT';
      return { role, own: role === 'USER', parts: [{ providerPart: { provider: 'openai', data: item, format: 'OPENAI_RESPONSES' } }] };
    }
  }
}

function readItems(items: unknown[], where: string, list: MessageList) {
  items.forEach((value, i) => {
    const iWhere = at(where, i);
    const { role, parts, own } = itemParts(object(value, iWhere), iWhere);
    if (own) list.flush();
    for (const part of parts) list.add(role, part);
    if (own) list.flush();
  });
}

/** Reads request `input` items (or a string, or a request body with `instructions` and `input`). */
export function readResponsesInput(value: unknown, where: string): ProviderRead {
  const list = new MessageList();
  let input = value;
  if (isObject(value)) {
    if (typeof value.instructions === 'string') {
      list.add('SYSTEM', { text: { text: value.instructions } });
      list.flush();
    }
    input = value.input;
    where = at(where, 'input');
  }
  if (typeof input === 'string') list.add('USER', { text: { text: input } });
  else readItems(array(input, where), where, list);
  return { messages: list.done(where), usage: null };
}

/** Reads a `Response`: its output items, and its usage. */
export function readResponsesResponse(value: unknown, where: string): ProviderRead {
  const response = object(value, where);
  if (response.object !== undefined && response.object !== 'response')
    throw badInput(`${at(where, 'object')} must be "response" (an OpenAI Response).`);
  const list = new MessageList();
  const oWhere = at(where, 'output');
  readItems(array(response.output, oWhere), oWhere, list);
  const usage = isObject(response.usage) ? response.usage : {};
  const cached = isObject(usage.input_tokens_details) ? count(usage.input_tokens_details.cached_tokens) : 0;
  return {
    messages: list.done(oWhere),
    usage: usageOf(
      {
        inputTokens: Math.max(0, count(usage.input_tokens) - cached),
        outputTokens: count(usage.output_tokens),
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      response.model,
      response.id,
    ),
  };
}
