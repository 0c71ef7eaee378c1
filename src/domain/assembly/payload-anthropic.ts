/** The Anthropic Messages payload (framing and rules: formats.ts). */
import { hasVisibleText } from './provider-rules.js';
import {
  hashedByIdentity,
  hasMediaMarker,
  mediaByResult,
  mediaType,
  pieceOf,
  textsOf,
  toolArgumentsValue,
  toolInputObject,
  withMediaAt,
} from './payload-pieces.js';
import { extraOf, metaOf, metaString, sends } from './provider-data.js';
import { type CacheBreakpoints, NO_BREAKPOINTS } from './cache-breakpoints.js';
import type { AssembledMessage, MediaPart } from './types.js';

export type AnthropicBlock =
  | { type: 'text'; text: string; citations?: unknown }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string | unknown[]; is_error?: true }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | Record<string, unknown>;
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  /** Blocks; a string when the client gave it so (`providerMetadata.anthropic.contentString`) and it is one text. */
  content: AnthropicBlock[] | string;
}

const blocksOf = (content: AnthropicMessage['content']): AnthropicBlock[] =>
  typeof content === 'string' ? [{ text: content, type: 'text' }] : content;
export interface AnthropicMessagesPayload {
  /** A string; one text block when it carries a cache breakpoint. */
  system?: string | [{ cache_control: { type: 'ephemeral' }; text: string; type: 'text' }];
  messages: AnthropicMessage[];
}

/**
 * An `image` block (source base64, url, or a Files API file id) or a `document` block for a PDF
 * (the same sources, titled with the file's name). A file source needs the request to carry the
 * `anthropic-beta: files-api-2025-04-14` header (the message's decision says so). A block read
 * from an Anthropic payload gets back its keys the attachment does not hold
 * (`providerMetadata.anthropic.extra`: a document's `citations`, `context`, a title that is not its
 * name), and a document that had no title gets none (`anthropic.untitled`).
 */
function anthropicMediaBlock(p: MediaPart): AnthropicBlock {
  const source =
    p.source.type === 'base64'
      ? hashedByIdentity({ data: p.source.data, media_type: mediaType(p), type: 'base64' }, 'data', p)
      : p.source.type === 'url'
        ? { type: 'url', url: p.source.url }
        : { file_id: p.source.fileId, type: 'file' };
  const extra = extraOf(p, 'anthropic');
  if (p.media === 'image') return { ...extra, source, type: 'image' };
  const title = metaOf(p, 'anthropic')?.untitled === true ? {} : { title: p.name };
  return { ...title, ...extra, source, type: 'document' };
}

/**
 * The content blocks of one user or assistant message (no empty text blocks), as a message of its
 * own. A block made from an Anthropic response or request gets back the keys it had that the part
 * does not model (`providerMetadata.anthropic.extra`: citations, …); a tool_result given as blocks
 * gets its blocks back unless it is sent as a stub. A TOOL message's media go in the content of
 * their tool_result: where its kept blocks had them, else after a text block of its content.
 */
function anthropicMessageOf(m: AssembledMessage): AnthropicMessage {
  const blocks: AnthropicBlock[] = [];
  const inResults = m.role === 'TOOL' ? mediaByResult(m.parts) : null;
  for (const p of m.parts) {
    switch (p.type) {
      case 'text':
        if (hasVisibleText(p.text)) blocks.push({ ...extraOf(p, 'anthropic'), text: p.text, type: 'text' });
        break;
      case 'toolCall':
        blocks.push({
          ...extraOf(p, 'anthropic'),
          id: p.callId,
          input: toolInputObject(toolArgumentsValue(p)),
          name: p.name,
          type: 'tool_use',
        });
        break;
      case 'toolResult': {
        const blocksGiven = metaOf(p, 'anthropic')?.content;
        const given: string | unknown[] = !p.elided && Array.isArray(blocksGiven) ? blocksGiven : p.content;
        // Its media go where its blocks had them (the markers the reader left), else after them.
        const media = (inResults?.get(p) ?? []).map(anthropicMediaBlock);
        const content =
          typeof given !== 'string'
            ? media.length > 0 || hasMediaMarker(given)
              ? withMediaAt(given, media)
              : given
            : media.length > 0
              ? [...(hasVisibleText(given) ? [{ text: given, type: 'text' }] : []), ...media]
              : given;
        const block = { ...extraOf(p, 'anthropic'), content, tool_use_id: p.callId, type: 'tool_result' as const };
        blocks.push(p.isError ? { ...block, is_error: true as const } : block);
        break;
      }
      case 'reasoning':
        if (!sends('ANTHROPIC_MESSAGES', p)) break;
        blocks.push(
          p.redacted
            ? { data: metaString(p, 'anthropic', 'redactedData')!, type: 'redacted_thinking' }
            : { signature: metaString(p, 'anthropic', 'signature')!, thinking: p.text, type: 'thinking' },
        );
        break;
      case 'providerPart':
        if (sends('ANTHROPIC_MESSAGES', p)) blocks.push(p.data);
        break;
      case 'media':
        if (!inResults || inResults.size === 0) blocks.push(anthropicMediaBlock(p));
        break;
    }
  }
  const role = m.role === 'ASSISTANT' ? 'assistant' : 'user';
  const only = blocks.length === 1 ? blocks[0] : null;
  if (only?.type === 'text' && Object.keys(only).length === 2 && metaOf(m.parts[0], 'anthropic')?.contentString === true) {
    return { content: only.text as string, role };
  }
  return { content: blocks, role };
}

/** The mark of a cache breakpoint (cache-breakpoints.ts). */
const EPHEMERAL = Object.freeze({ type: 'ephemeral' as const });

/** Blocks a cache_control mark may go on (Anthropic: not on thinking blocks; unknown provider blocks are left alone). */
const MARKABLE = new Set(['text', 'tool_use', 'tool_result', 'image', 'document']);

/** `message` (a sealed piece: copied) with its last markable block marked; as it is when it has none. */
function withCacheMark(message: AnthropicMessage): AnthropicMessage {
  const blocks = blocksOf(message.content);
  for (let k = blocks.length - 1; k >= 0; k--) {
    if (!MARKABLE.has(blocks[k].type as string)) continue;
    const content = [...blocks];
    content[k] = { cache_control: EPHEMERAL, ...blocks[k] };
    return { content, role: message.role };
  }
  return message;
}

/**
 * The Anthropic payload of `messages`; `breakpoints` says where cache_control marks go: at the end
 * of the system block (then sent as one text block), and on the last block of the marked messages.
 */
export function toAnthropicMessages(
  messages: readonly AssembledMessage[],
  breakpoints: CacheBreakpoints = NO_BREAKPOINTS,
): AnthropicMessagesPayload {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  // Whether out's last message was made here by merging (so it may be extended in place).
  let lastMerged = false;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'SYSTEM') {
      const text = textsOf(m.parts).join('\n\n');
      if (hasVisibleText(text)) system.push(text);
      continue;
    }
    const piece = pieceOf('ANTHROPIC_MESSAGES', m, anthropicMessageOf);
    if (piece.content.length === 0) continue;
    const message = breakpoints.messages.has(i) ? withCacheMark(piece) : piece;
    const last = out[out.length - 1];
    if (last && last.role === message.role) {
      const merged = lastMerged ? (last.content as AnthropicBlock[]) : [...blocksOf(last.content)];
      merged.push(...blocksOf(message.content));
      out[out.length - 1] = { content: merged, role: last.role };
      lastMerged = true;
    } else {
      out.push(message);
      lastMerged = false;
    }
  }
  trimFinalAssistant(out);
  if (system.length === 0) return { messages: out };
  const joined = system.join('\n\n');
  return { messages: out, system: breakpoints.system ? [{ cache_control: EPHEMERAL, text: joined, type: 'text' }] : joined };
}

/** Anthropic refuses final assistant content ending in whitespace: the last text block is trimmed (a copy: pieces are sealed). */
function trimFinalAssistant(out: AnthropicMessage[]): void {
  const last = out[out.length - 1];
  if (last?.role !== 'assistant') return;
  if (typeof last.content === 'string') {
    if (last.content !== last.content.trimEnd()) out[out.length - 1] = { content: last.content.trimEnd(), role: last.role };
    return;
  }
  const block = last.content[last.content.length - 1];
  if (block.type !== 'text' || typeof block.text !== 'string' || block.text === block.text.trimEnd()) return;
  out[out.length - 1] = { content: [...last.content.slice(0, -1), { ...block, text: block.text.trimEnd() }], role: last.role };
}
