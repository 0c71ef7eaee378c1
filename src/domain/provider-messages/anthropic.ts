/**
 * Anthropic Messages: request `messages` (and `system`) and a `Message` response. Blocks the parts
 * model (text, tool_use, tool_result, thinking, redacted_thinking, image, document) keep their
 * other keys in `providerMetadata.anthropic.extra`; every other block is a provider part.
 * `cache_control` is not kept: breakpoints are the assembler's to place (at most 4 per request).
 *
 * A user message's `image` and `document` blocks are attachments (media.ts): source `base64` as
 * data with its `media_type`, `url` as the URL, `file` as an Anthropic provider file, a plain-text
 * document (`text` source) as text; a document's `title` is its name (`anthropic.untitled` when it
 * had none). Those in a tool_result's content are attachments of the TOOL message after that
 * result (a text document stays among the result's blocks): the blocks kept for Anthropic hold a
 * marker where each was. A `content` source, or a source this does not know, stays a provider part.
 */
import { mediaKindOf } from '../assembly/media-rules.js';
import { mediaMarker } from '../assembly/payload-pieces.js';
import { badInput } from '../errors.js';
import type { PartInput } from '../parts.js';
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
import { attachmentPart, fileId, givenName, httpsUrl, imageTypeOf, MediaNames, mediaType, type MediaSource } from './media.js';

const DROPPED = ['cache_control'];

const anthropicMeta = (fields: Json) => metadata('anthropic', fields);

/** A block's keys beyond `modeled`, as `extra` (none: no key). */
function extraFields(block: Json, modeled: readonly string[]): Json {
  const extra = without(block, [...modeled, ...DROPPED]);
  return extra ? { extra } : {};
}

function textPart(block: Json, where: string, flag: Json = {}): PartInput {
  return {
    text: {
      text: string(block.text, at(where, 'text')),
      providerMetadata: anthropicMeta({ ...flag, ...extraFields(block, ['type', 'text']) }),
    },
  };
}

function toolResultText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  return array(content, where)
    .flatMap((b, i) => {
      const block = object(b, at(where, i));
      return block.type === 'text' ? [string(block.text, at(at(where, i), 'text'))] : [];
    })
    .join('\n');
}

function assistantPart(block: Json, where: string): PartInput {
  switch (block.type) {
    case 'text':
      return textPart(block, where);
    case 'tool_use':
      return {
        toolCall: {
          callId: string(block.id, at(where, 'id')),
          name: string(block.name, at(where, 'name')),
          argumentsJson: JSON.stringify(object(block.input ?? {}, at(where, 'input'))),
          providerMetadata: anthropicMeta(extraFields(block, ['type', 'id', 'name', 'input'])),
        },
      };
    case 'thinking':
      return {
        reasoning: {
          text: string(block.thinking, at(where, 'thinking')),
          providerMetadata: anthropicMeta({ signature: string(block.signature, at(where, 'signature')) }),
        },
      };
    case 'redacted_thinking':
      return {
        reasoning: { text: '', redacted: true, providerMetadata: anthropicMeta({ redactedData: string(block.data, at(where, 'data')) }) },
      };
    default:
      return providerPart(block, where);
  }
}

function providerPart(block: Json, where: string): PartInput {
  string(block.type, at(where, 'type'));
  return { providerPart: { provider: 'anthropic', data: without(block, DROPPED) ?? {} } };
}

/**
 * An `image` or `document` block as an attachment part, or null when it stays what it was (a
 * provider part, or a block among a tool result's): a source this does not read, a type that is
 * not sent as media, a text document in a tool result (a TOOL message holds images and PDFs only).
 */
function mediaPart(block: Json, where: string, names: MediaNames, inToolResult: boolean): PartInput | null {
  if ((block.type !== 'image' && block.type !== 'document') || !isObject(block.source)) return null;
  const kind = block.type === 'image' ? 'image' : 'document';
  const source = block.source;
  const sWhere = at(where, 'source');
  const only = (...keys: string[]) => Object.keys(source).every((k) => keys.includes(k));
  let mimeType: string;
  let from: MediaSource;
  switch (source.type) {
    case 'base64': {
      if (!only('type', 'media_type', 'data')) return null;
      mimeType = mediaType(string(source.media_type, at(sWhere, 'media_type')));
      if (mediaKindOf(mimeType) !== kind) return null;
      from = { data: string(source.data, at(sWhere, 'data')), where: at(sWhere, 'data') };
      break;
    }
    case 'url': {
      const url = httpsUrl(source.url);
      if (url === null || !only('type', 'url')) return null;
      mimeType = kind === 'image' ? imageTypeOf(url) : 'application/pdf';
      from = { url };
      break;
    }
    case 'file': {
      const id = fileId(source.file_id);
      if (id === null || !only('type', 'file_id')) return null;
      mimeType = kind === 'image' ? imageTypeOf() : 'application/pdf';
      from = { providerFile: { provider: 'anthropic', fileId: id } };
      break;
    }
    case 'text': {
      if (kind !== 'document' || inToolResult || !only('type', 'media_type', 'data')) return null;
      mimeType = 'text/plain';
      from = { content: string(source.data, at(sWhere, 'data')), where: at(sWhere, 'data') };
      break;
    }
    default:
      return null;
  }
  // A document's title is its name; one that cannot be a name is kept with the block's other keys.
  const title = kind === 'document' ? givenName(block.title) : null;
  const extra = without(block, ['type', 'source', ...DROPPED, ...(title !== null ? ['title'] : [])]);
  const fields: Json = { ...(extra ? { extra } : {}), ...(kind === 'document' && block.title === undefined ? { untitled: true } : {}) };
  const name = names.next(kind, mimeType, title);
  return attachmentPart(name, mimeType, from, at(where, 'type'), metadata('anthropic', fields, false));
}

/** The `content` of one message: a string or blocks. */
function blocksOf(content: unknown, where: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return array(content, where).map((b, i) => object(b, at(where, i)));
}

/** Reads request `messages` (and the request's `system`, when the body is given whole). */
export function readAnthropicMessages(value: unknown, where: string): ProviderRead {
  const list = new MessageList();
  let items: unknown = value;
  if (isObject(value)) {
    items = value.messages;
    if (value.system !== undefined) {
      const system = value.system;
      if (typeof system === 'string') list.add('SYSTEM', { text: { text: system } });
      else
        for (const [i, b] of array(system, at(where, 'system')).entries())
          list.add('SYSTEM', textPart(object(b, at(at(where, 'system'), i)), at(at(where, 'system'), i)));
      list.flush();
    }
    where = at(where, 'messages');
  }
  for (const [i, m] of array(items, where).entries()) {
    const mWhere = at(where, i);
    const message = object(m, mWhere);
    const cWhere = at(mWhere, 'content');
    const blocks = blocksOf(message.content, cWhere);
    const asString = typeof message.content === 'string';
    if (message.role === 'assistant') {
      if (asString) list.add('ASSISTANT', textPart(blocks[0], cWhere, { contentString: true }));
      else blocks.forEach((b, k) => list.add('ASSISTANT', assistantPart(b, at(cWhere, k))));
    } else if (message.role === 'user') {
      if (asString) list.add('USER', textPart(blocks[0], cWhere, { contentString: true }));
      else {
        const names = new MediaNames();
        blocks.forEach((b, k) => {
          const bWhere = at(cWhere, k);
          if (b.type === 'tool_result') {
            // Its images and documents become attachments after it; its kept blocks mark where they were.
            const media: PartInput[] = [];
            const rWhere = at(bWhere, 'content');
            const kept = Array.isArray(b.content)
              ? b.content.map((block, j) => {
                  const part = mediaPart(object(block, at(rWhere, j)), at(rWhere, j), names, true);
                  if (part === null) return block;
                  media.push(part);
                  return mediaMarker();
                })
              : undefined;
            const result = {
              callId: string(b.tool_use_id, at(bWhere, 'tool_use_id')),
              content: toolResultText(b.content, rWhere),
              isError: b.is_error === true,
            };
            const fields = {
              ...extraFields(b, ['type', 'tool_use_id', 'content', ...(b.is_error === true ? ['is_error'] : [])]),
              ...(kept ? { content: kept } : {}),
            };
            list.add('TOOL', { toolResult: { ...result, providerMetadata: anthropicMeta(fields) } });
            for (const part of media) list.add('TOOL', part);
          } else if (b.type === 'text') list.add('USER', textPart(b, bWhere));
          else list.add('USER', mediaPart(b, bWhere, names, false) ?? providerPart(b, bWhere));
        });
      }
    } else throw badInput(`${at(mWhere, 'role')} must be "user" or "assistant".`);
    list.flush();
  }
  return { messages: list.done(where), usage: null };
}

/** Reads a `Message` response: one assistant message, and its usage. */
export function readAnthropicResponse(value: unknown, where: string): ProviderRead {
  const response = object(value, where);
  if (response.type !== undefined && response.type !== 'message')
    throw badInput(`${at(where, 'type')} must be "message" (an Anthropic Message).`);
  const list = new MessageList();
  const cWhere = at(where, 'content');
  blocksOf(response.content, cWhere).forEach((b, k) => list.add('ASSISTANT', assistantPart(b, at(cWhere, k))));
  const usage = isObject(response.usage) ? response.usage : {};
  return {
    messages: list.done(cWhere),
    usage: usageOf(
      {
        inputTokens: count(usage.input_tokens),
        outputTokens: count(usage.output_tokens),
        cacheReadTokens: count(usage.cache_read_input_tokens),
        cacheWriteTokens: count(usage.cache_creation_input_tokens),
      },
      response.model,
      response.id,
    ),
  };
}
