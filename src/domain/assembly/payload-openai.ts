/** The OpenAI payloads: Chat Completions `messages` and Responses `input` (framing and rules: formats.ts). */
import { markImmutable } from '../immutable.js';
import { toolArgumentsText } from '../tokens.js';
import { seal } from './hash.js';
import { dataUrl, hashedByIdentity, hasMediaMarker, mediaByResult, pieceOf, textsOf, unsendable, withMediaAt } from './payload-pieces.js';
import { extraOf, metaOf, metaString, sends } from './provider-data.js';
import type { AssembledMessage, AssembledPart, MediaPart } from './types.js';

export type OpenAiContentPart = { type: 'text'; text: string } | Record<string, unknown>;
export type OpenAiContent = string | OpenAiContentPart[];
export type OpenAiMessage =
  | { role: 'system' | 'developer' | 'user'; content: OpenAiContent }
  | {
      role: 'assistant';
      content: OpenAiContent | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; tool_call_id: string; content: string | unknown[] };
export interface OpenAiChatPayload {
  messages: OpenAiMessage[];
}

/**
 * Whether the message's content goes as an array of parts even when it holds one text: the client
 * gave it so (`providerMetadata.openai.contentArray` on its first part), or it holds other parts.
 */
const asArray = (m: AssembledMessage) => m.parts.length > 0 && metaOf(m.parts[0], 'openai')?.contentArray === true;

/** The role a SYSTEM message is sent with: `developer` when it came as one. */
const systemRole = (m: AssembledMessage): 'system' | 'developer' =>
  m.parts.length > 0 && metaString(m.parts[0], 'openai', 'role') === 'developer' ? 'developer' : 'system';

/** The `detail` an image is sent with: the one its OpenAI block had (`providerMetadata.openai.detail`), else `auto`. */
const detailOf = (p: MediaPart) => metaString(p, 'openai', 'detail') ?? 'auto';

/**
 * A Chat Completions content part for an image (`image_url`: a data URL or an https URL, with its
 * `detail`) or a PDF (`file`: a data URL with its filename, or an OpenAI file id). A part read from
 * a Chat payload gets back its other keys (`openai.chatExtra`).
 */
function chatMediaPart(p: MediaPart): OpenAiContentPart {
  const source = p.source;
  const extra = extraOf(p, 'openai', 'chatExtra');
  if (p.media === 'image') {
    if (source.type === 'base64')
      return {
        ...extra,
        image_url: hashedByIdentity({ detail: detailOf(p), url: dataUrl({ ...p, source }) }, 'url', p),
        type: 'image_url',
      };
    if (source.type === 'url') return { ...extra, image_url: { detail: detailOf(p), url: source.url }, type: 'image_url' };
  } else {
    if (source.type === 'base64')
      return { ...extra, file: hashedByIdentity({ file_data: dataUrl({ ...p, source }), filename: p.name }, 'file_data', p), type: 'file' };
    if (source.type === 'providerFile') return { ...extra, file: { file_id: source.fileId }, type: 'file' };
  }
  throw unsendable('OPENAI_CHAT', p);
}

/** Content of a Chat message: text parts, media and the message's own OPENAI_CHAT provider parts (image_url, …), in order. */
function chatContent(m: AssembledMessage): OpenAiContent {
  const items: OpenAiContentPart[] = [];
  let plain = true;
  for (const p of m.parts) {
    if (p.type === 'text') {
      items.push({ ...extraOf(p, 'openai', 'chatExtra'), text: p.text, type: 'text' });
    } else if (p.type === 'media') {
      items.push(chatMediaPart(p));
      plain = false;
    } else if (p.type === 'providerPart' && sends('OPENAI_CHAT', p)) {
      items.push(p.data);
      plain = false;
    }
  }
  if (plain && !asArray(m) && items.length <= 1) return items.length === 0 ? '' : (items[0] as { text: string }).text;
  return items;
}

/** The Chat Completions messages of one assembled message (a TOOL message gives one per result). */
function openAiMessagesOf(m: AssembledMessage): OpenAiMessage[] {
  switch (m.role) {
    case 'SYSTEM':
      return [{ content: chatContent(m), role: systemRole(m) }];
    case 'USER':
      return [{ content: chatContent(m), role: 'user' }];
    case 'ASSISTANT': {
      const calls: NonNullable<Extract<OpenAiMessage, { role: 'assistant' }>['tool_calls']> = [];
      for (const p of m.parts) {
        if (p.type === 'toolCall') {
          calls.push({
            ...extraOf(p, 'openai', 'chatExtra'),
            function: { arguments: toolArgumentsText(p), name: p.name },
            id: p.callId,
            type: 'function',
          });
        }
      }
      const hasContent = m.parts.some((p) => p.type === 'text' || (p.type === 'providerPart' && sends('OPENAI_CHAT', p)));
      const fields = m.parts.length > 0 ? messageFields(m.parts[0]) : {};
      if (calls.length === 0) return [{ ...fields, content: chatContent(m), role: 'assistant' }];
      if (!hasContent && metaOf(m.parts[0], 'openai')?.noContent === true)
        return [{ ...fields, role: 'assistant', tool_calls: calls } as OpenAiMessage];
      return [{ ...fields, content: hasContent ? chatContent(m) : null, role: 'assistant', tool_calls: calls }];
    }
    case 'TOOL': {
      const out: OpenAiMessage[] = [];
      for (const p of m.parts) {
        if (p.type !== 'toolResult') continue;
        const given = metaOf(p, 'openai')?.content;
        out.push({ content: !p.elided && Array.isArray(given) ? given : p.content, role: 'tool', tool_call_id: p.callId });
      }
      const texts = textsOf(m.parts);
      if (texts.length > 0)
        out.push({ content: texts.length === 1 ? texts[0] : texts.map((text) => ({ text, type: 'text' as const })), role: 'user' });
      return out;
    }
  }
}

/** Keys of a Chat assistant message the parts do not model (`name`, `refusal`), kept on its first part. */
function messageFields(first: AssembledPart): Record<string, unknown> {
  const fields = metaOf(first, 'openai')?.message;
  return fields !== null && typeof fields === 'object' && !Array.isArray(fields) ? (fields as Record<string, unknown>) : {};
}

export function toOpenAiChat(messages: readonly AssembledMessage[]): OpenAiChatPayload {
  const out: OpenAiMessage[] = [];
  for (const m of messages) {
    // The messages go into the payload one by one: each is sealed.
    const piece = pieceOf('OPENAI_CHAT', m, openAiMessagesOf, (list) => markImmutable(list.map(seal)));
    for (let i = 0; i < piece.length; i++) out.push(piece[i]);
  }
  return { messages: out };
}

// ---------------------------------------------------------------- OpenAI Responses

export type ResponsesText = { type: 'input_text' | 'output_text'; text: string; annotations?: unknown[] };
export type ResponsesItem =
  | {
      type: 'message';
      role: 'system' | 'developer' | 'user' | 'assistant';
      content: string | Array<ResponsesText | Record<string, unknown>>;
    }
  | { type: 'message'; id: string; role: 'assistant'; status: string; content: ResponsesText[] }
  | { type: 'function_call'; call_id: string; name: string; arguments: string; id?: string }
  | { type: 'function_call_output'; call_id: string; output: string | unknown[] }
  | { type: 'reasoning'; id: string; summary: unknown[]; encrypted_content?: string }
  | Record<string, unknown>;
export interface OpenAiResponsesPayload {
  input: ResponsesItem[];
}

/**
 * A Responses content item for an image (`input_image`: a data URL, an https URL or an OpenAI file
 * id; its `detail`, `auto` when none, which the SDK's message type requires) or a PDF
 * (`input_file`: a data URL with its filename, an https URL or a file id). The same shapes serve a
 * message's content and a function_call_output's list. An item read from a Responses payload gets
 * back its other keys (`openai.extra`: a `filename` beside a URL or file id).
 */
function responsesMediaItem(p: MediaPart): Record<string, unknown> {
  const source = p.source;
  const extra = extraOf(p, 'openai');
  if (p.media === 'image') {
    const detail = detailOf(p);
    switch (source.type) {
      case 'base64':
        return hashedByIdentity({ ...extra, detail, image_url: dataUrl({ ...p, source }), type: 'input_image' }, 'image_url', p);
      case 'url':
        return { ...extra, detail, image_url: source.url, type: 'input_image' };
      case 'providerFile':
        return { ...extra, detail, file_id: source.fileId, type: 'input_image' };
    }
  }
  switch (source.type) {
    case 'base64':
      return hashedByIdentity({ ...extra, file_data: dataUrl({ ...p, source }), filename: p.name, type: 'input_file' }, 'file_data', p);
    case 'url':
      return { ...extra, file_url: source.url, type: 'input_file' };
    case 'providerFile':
      return { ...extra, file_id: source.fileId, type: 'input_file' };
  }
}

/** A system, developer or user message item: its texts as `input_text` parts, its media, and its own Responses provider parts (input_image, …). */
function responsesInputMessage(m: AssembledMessage, role: 'system' | 'developer' | 'user'): ResponsesItem {
  const items: Array<ResponsesText | Record<string, unknown>> = [];
  let plain = true;
  for (const p of m.parts) {
    if (p.type === 'text') items.push({ ...extraOf(p, 'openai'), text: p.text, type: 'input_text' });
    else if (p.type === 'media') {
      items.push(responsesMediaItem(p));
      plain = false;
    } else if (p.type === 'providerPart' && sends('OPENAI_RESPONSES', p)) {
      items.push(p.data);
      plain = false;
    }
  }
  const content = plain && !asArray(m) && items.length <= 1 ? (items.length === 0 ? '' : (items[0] as ResponsesText).text) : items;
  return { ...itemFields(m.parts[0]), content, role, type: 'message' };
}

/** Keys of the item a part came from that the part does not model (`status`, `phase`), kept on the item's first part. */
function itemFields(first: AssembledPart | undefined): Record<string, unknown> {
  const fields = first && metaOf(first, 'openai')?.item;
  return fields !== null && typeof fields === 'object' && !Array.isArray(fields) ? (fields as Record<string, unknown>) : {};
}

/**
 * The items of an assistant message, in the order of its parts: a reasoning item per reasoning part
 * OpenAI made, a message item per run of text parts of one OpenAI item (with its id, status and
 * each text's annotations: the SDK's `ResponseOutputMessage`) or per text part without one (the
 * SDK's `EasyInputMessage`, content a string: an `output_text` part needs the item's id), a
 * function_call per call, and the message's own Responses provider parts (web_search_call, …).
 */
function responsesAssistantItems(m: AssembledMessage): ResponsesItem[] {
  const out: ResponsesItem[] = [];
  type OpenItem = { id: string; content: ResponsesText[] };
  let open = null as OpenItem | null;
  for (const p of m.parts) {
    const itemId = metaString(p, 'openai', 'itemId');
    if (p.type === 'text') {
      if (itemId === undefined) {
        open = null;
        out.push({ ...itemFields(p), content: p.text, role: 'assistant', type: 'message' });
        continue;
      }
      const text: ResponsesText = { annotations: [], ...extraOf(p, 'openai'), text: p.text, type: 'output_text' };
      if (open?.id === itemId) open.content.push(text);
      else {
        open = { id: itemId, content: [text] };
        out.push({ status: 'completed', ...itemFields(p), content: open.content, id: itemId, role: 'assistant', type: 'message' });
      }
      continue;
    }
    open = null;
    if (p.type === 'toolCall') {
      const call = {
        ...extraOf(p, 'openai'),
        arguments: toolArgumentsText(p),
        call_id: p.callId,
        name: p.name,
        type: 'function_call' as const,
      };
      out.push(itemId === undefined ? call : { ...call, id: itemId });
    } else if (p.type === 'reasoning') {
      if (!sends('OPENAI_RESPONSES', p)) continue;
      const given = metaOf(p, 'openai')?.summary;
      const summary = Array.isArray(given) ? given : p.text === '' ? [] : [{ text: p.text, type: 'summary_text' }];
      const encrypted = metaString(p, 'openai', 'encryptedContent');
      const item = { ...extraOf(p, 'openai'), id: itemId!, summary, type: 'reasoning' as const };
      out.push(encrypted === undefined ? item : { ...item, encrypted_content: encrypted });
    } else if (p.type === 'providerPart' && sends('OPENAI_RESPONSES', p)) {
      out.push(p.data);
    }
  }
  if (out.length === 0) out.push({ content: '', role: 'assistant', type: 'message' });
  return out;
}

/** The Responses input items of one assembled message (calls and results are items of their own). */
function responsesItemsOf(m: AssembledMessage): ResponsesItem[] {
  switch (m.role) {
    case 'SYSTEM':
      return [responsesInputMessage(m, systemRole(m))];
    case 'USER':
      return [responsesInputMessage(m, 'user')];
    case 'ASSISTANT':
      return responsesAssistantItems(m);
    case 'TOOL': {
      const out: ResponsesItem[] = [];
      // A result's media go in its output, which becomes a list (input_text first).
      const media = mediaByResult(m.parts);
      for (const p of m.parts) {
        if (p.type !== 'toolResult') continue;
        const given = metaOf(p, 'openai')?.output;
        const itemId = metaString(p, 'openai', 'itemId');
        const output: string | unknown[] = !p.elided && Array.isArray(given) ? given : p.content;
        // Its media go where its output list had them (the markers the reader left), else after it.
        const items = (media.get(p) ?? []).map(responsesMediaItem);
        const item = {
          ...extraOf(p, 'openai'),
          call_id: p.callId,
          output:
            typeof output !== 'string'
              ? items.length > 0 || hasMediaMarker(output)
                ? withMediaAt(output, items)
                : output
              : items.length > 0
                ? [...(output === '' ? [] : [{ text: output, type: 'input_text' }]), ...items]
                : output,
          type: 'function_call_output' as const,
        };
        out.push(itemId === undefined ? item : { ...item, id: itemId });
      }
      const texts = textsOf(m.parts);
      const ownMedia = media.size === 0 && m.parts.some((p) => p.type === 'media');
      if (ownMedia) {
        // No result to carry them (never in a stored session): the message's own user item does.
        out.push(responsesInputMessage({ ...m, parts: m.parts.filter((p) => p.type === 'text' || p.type === 'media') }, 'user'));
      } else if (texts.length > 0) {
        out.push({
          content: texts.length === 1 ? texts[0] : texts.map((text) => ({ text, type: 'input_text' as const })),
          role: 'user',
          type: 'message',
        });
      }
      return out;
    }
  }
}

export function toOpenAiResponses(messages: readonly AssembledMessage[]): OpenAiResponsesPayload {
  const out: ResponsesItem[] = [];
  for (const m of messages) {
    const piece = pieceOf('OPENAI_RESPONSES', m, responsesItemsOf, (list) => markImmutable(list.map(seal)));
    for (let i = 0; i < piece.length; i++) out.push(piece[i]);
  }
  return { input: out };
}
