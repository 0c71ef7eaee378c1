/**
 * Claude's data export (`conversations.json`: an array of conversations, each with `chat_messages`
 * whose `parent_message_uuid` makes a tree, and `current_leaf_message_uuid` when it has one) as
 * conversation trees. An export without parents (older ones) is one path, in file order. Kept:
 * each message's text blocks (`content[].text`, else `text`); thinking, tool use and attachments'
 * files are left out, an attachment's extracted text kept as a text block.
 */
import { badInput } from '../errors.js';
import type { ForeignConversation, ForeignMessage, ForeignNode } from './tree.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const ROLES: Record<string, ForeignMessage['role']> = { human: 'USER', user: 'USER', assistant: 'ASSISTANT' };
/** Claude's parent of a conversation's first message. */
const NO_PARENT = '00000000-0000-4000-8000-000000000000';

const isoOf = (value: unknown, fallback: string) =>
  typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? new Date(Date.parse(value)).toISOString() : fallback;

function textOf(raw: Json): string {
  const blocks = Array.isArray(raw.content)
    ? raw.content.filter((b): b is Json => isObject(b) && b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string)
    : [];
  const texts = blocks.length > 0 ? blocks : typeof raw.text === 'string' ? [raw.text] : [];
  for (const attachment of Array.isArray(raw.attachments) ? raw.attachments : []) {
    if (isObject(attachment) && typeof attachment.extracted_content === 'string' && attachment.extracted_content !== '') {
      const name = typeof attachment.file_name === 'string' ? attachment.file_name : 'attachment';
      texts.push(`[${name}]\n${attachment.extracted_content}`);
    }
  }
  return texts.filter((t) => t.trim() !== '').join('\n');
}

/** The conversations of a Claude export (an array, or one conversation object). */
export function claudeConversations(data: unknown): ForeignConversation[] {
  const list = Array.isArray(data) ? data : [data];
  return list.map((raw, index) => {
    if (!isObject(raw) || !Array.isArray(raw.chat_messages))
      throw badInput(`conversation ${index}: not a Claude conversation (no "chat_messages").`);
    const createdAt = isoOf(raw.created_at, new Date(0).toISOString());
    const nodes = new Map<string, ForeignNode>();
    const linear = raw.chat_messages.every((m) => !isObject(m) || typeof m.parent_message_uuid !== 'string');
    let previous: string | null = null;
    for (const [i, m] of raw.chat_messages.entries()) {
      if (!isObject(m)) continue;
      const id = typeof m.uuid === 'string' ? m.uuid : `message-${i}`;
      const role = typeof m.sender === 'string' ? ROLES[m.sender] : undefined;
      const text = isObject(m) ? textOf(m) : '';
      const parentRaw = linear ? previous : (m.parent_message_uuid as string);
      const parent = parentRaw === NO_PARENT ? null : parentRaw;
      nodes.set(id, {
        id,
        parent,
        children: [],
        message: role && text !== '' ? { role, text, createdAt: isoOf(m.created_at, createdAt) } : null,
      });
      previous = id;
    }
    for (const node of nodes.values()) if (node.parent !== null) nodes.get(node.parent)?.children.push(node.id);
    const id = typeof raw.uuid === 'string' ? raw.uuid : `claude-${index}`;
    return {
      id,
      title: typeof raw.name === 'string' && raw.name !== '' ? raw.name : 'Claude conversation',
      createdAt,
      updatedAt: isoOf(raw.updated_at, createdAt),
      metadata: { source: 'claude', conversationId: id },
      nodes,
      current: typeof raw.current_leaf_message_uuid === 'string' ? raw.current_leaf_message_uuid : previous,
    };
  });
}
