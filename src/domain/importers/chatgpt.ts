/**
 * ChatGPT's data export (`conversations.json`: an array of conversations, each a `mapping` of
 * nodes with `parent` and `children`, and the `current_node` it was left at) as conversation trees.
 * Kept: user, assistant and system messages with text (`text`, `multimodal_text` and `code`
 * content; images and other non-text parts are named in brackets); hidden and empty nodes and tool
 * traffic are left out, their children kept. Read defensively: a field ChatGPT renames or drops
 * leaves its message out rather than refusing the file.
 */
import { badInput } from '../errors.js';
import type { ForeignConversation, ForeignMessage, ForeignNode } from './tree.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const ROLES: Record<string, ForeignMessage['role']> = { user: 'USER', assistant: 'ASSISTANT', system: 'SYSTEM' };

/** Seconds since the epoch (ChatGPT's times) as ISO 8601, or `fallback`. */
export function isoOfSeconds(value: unknown, fallback: string): string {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value < 1e11 ? new Date(value * 1000).toISOString() : fallback;
}

function textOf(content: unknown): string {
  if (!isObject(content)) return '';
  if (typeof content.text === 'string') return content.text;
  if (!Array.isArray(content.parts)) return '';
  return content.parts
    .map((part) => {
      if (typeof part === 'string') return part;
      if (isObject(part) && typeof part.text === 'string') return part.text;
      if (isObject(part) && typeof part.content_type === 'string') return `[${part.content_type}]`;
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

function messageOf(raw: unknown, fallbackTime: string): ForeignMessage | null {
  if (!isObject(raw)) return null;
  const role = isObject(raw.author) && typeof raw.author.role === 'string' ? ROLES[raw.author.role] : undefined;
  if (!role) return null;
  const metadata = isObject(raw.metadata) ? raw.metadata : {};
  if (metadata.is_visually_hidden_from_conversation === true || raw.weight === 0) return null;
  const contentType = isObject(raw.content) ? raw.content.content_type : undefined;
  if (contentType !== 'text' && contentType !== 'multimodal_text' && contentType !== 'code') return null;
  const text = textOf(raw.content);
  if (text.trim() === '') return null;
  return { role, text: contentType === 'code' ? `\`\`\`\n${text}\n\`\`\`` : text, createdAt: isoOfSeconds(raw.create_time, fallbackTime) };
}

/** The conversations of a ChatGPT export (an array, or one conversation object). */
export function chatgptConversations(data: unknown): ForeignConversation[] {
  const list = Array.isArray(data) ? data : [data];
  return list.map((raw, index) => {
    if (!isObject(raw) || !isObject(raw.mapping)) throw badInput(`conversation ${index}: not a ChatGPT conversation (no "mapping").`);
    const createdAt = isoOfSeconds(raw.create_time, new Date(0).toISOString());
    const nodes = new Map<string, ForeignNode>();
    for (const [key, node] of Object.entries(raw.mapping)) {
      if (!isObject(node)) continue;
      const children = Array.isArray(node.children) ? node.children.filter((c): c is string => typeof c === 'string') : [];
      nodes.set(key, {
        id: key,
        parent: typeof node.parent === 'string' ? node.parent : null,
        children,
        message: messageOf(node.message, createdAt),
      });
    }
    const id = typeof raw.conversation_id === 'string' ? raw.conversation_id : typeof raw.id === 'string' ? raw.id : `chatgpt-${index}`;
    return {
      id,
      title: typeof raw.title === 'string' && raw.title !== '' ? raw.title : 'ChatGPT conversation',
      createdAt,
      updatedAt: isoOfSeconds(raw.update_time, createdAt),
      metadata: {
        source: 'chatgpt',
        conversationId: id,
        ...(typeof raw.default_model_slug === 'string' ? { model: raw.default_model_slug } : {}),
      },
      nodes,
      current: typeof raw.current_node === 'string' ? raw.current_node : null,
    };
  });
}
