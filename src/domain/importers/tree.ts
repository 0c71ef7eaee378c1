/**
 * A conversation tree of another service (ChatGPT's `mapping`, Claude's `parent_message_uuid`) as
 * export lines: the path to the conversation's current message becomes a root session, and each
 * other branch a fork of the session whose path it leaves, cut at the nearest USER message at or
 * before the branch (a fork is cut at a USER message, docs/guide.md): the fork's own messages
 * repeat the parent's from that USER message to the branch, then follow the branch.
 */
import { EXPORT_FORMAT, EXPORT_VERSION, type MessageLine, type SessionLine } from '../export-format.js';
import { childLineage } from '../lineage.js';

export interface ForeignMessage {
  role: 'SYSTEM' | 'USER' | 'ASSISTANT' | 'TOOL';
  text: string;
  createdAt: string;
}

export interface ForeignNode {
  id: string;
  parent: string | null;
  children: string[];
  /** Null for a node that is not a message to keep (ChatGPT's hidden root and system nodes). */
  message: ForeignMessage | null;
}

export interface ForeignConversation {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  metadata: Record<string, unknown>;
  nodes: Map<string, ForeignNode>;
  /** The message the conversation was left at: its path is the root session. */
  current: string | null;
}

interface Built {
  line: SessionLine;
  /** Node ids of the whole path, root first. */
  path: string[];
  /** Message ids visible at each position (own ones and inherited). */
  visible: string[];
  roles: ForeignMessage['role'][];
  /** Index in `path` of the first node this session owns. */
  ownFrom: number;
}

/** The node path from the tree's root to `id`. */
function pathTo(nodes: Map<string, ForeignNode>, id: string): string[] {
  const path: string[] = [];
  const seen = new Set<string>();
  for (let at: string | null = id; at !== null && nodes.has(at) && !seen.has(at); at = nodes.get(at)!.parent) {
    seen.add(at);
    path.push(at);
  }
  return path.reverse();
}

/** The path on from `id`, following each node's last child (the newest, in both services' order). */
function pathFrom(nodes: Map<string, ForeignNode>, id: string): string[] {
  const path = [id];
  const seen = new Set(path);
  for (let node = nodes.get(id); node && node.children.length > 0; ) {
    const next = node.children[node.children.length - 1];
    if (seen.has(next) || !nodes.has(next)) break;
    seen.add(next);
    path.push(next);
    node = nodes.get(next);
  }
  return path;
}

/** The lines of one conversation (no header or end): its root session, then its forks. */
export function conversationLines(conversation: ForeignConversation): { lines: string[]; messages: number; sessions: number } {
  const { nodes } = conversation;
  const out: string[] = [];
  let messages = 0;
  let forks = 0;
  const emit = (session: SessionLine, own: MessageLine[]) => {
    out.push(JSON.stringify(session));
    for (const m of own) out.push(JSON.stringify(m));
    messages += own.length;
  };
  const messageLine = (sessionId: string, id: string, position: number, m: ForeignMessage): MessageLine => ({
    type: 'message',
    id,
    sessionId,
    position,
    role: m.role,
    parts: [{ type: 'text', text: m.text }],
    toolCallIds: [],
    toolResultIds: [],
    generating: false,
    tokensO200k: null,
    tokensCl100k: null,
    turnId: null,
    agentId: null,
    createdAt: m.createdAt,
    updatedAt: m.createdAt,
  });
  const leaf = conversation.current && nodes.has(conversation.current) ? conversation.current : lastLeaf(nodes);
  if (leaf === null) return { lines: [], messages: 0, sessions: 0 };
  const rootPath = pathTo(nodes, leaf);
  const base = {
    type: 'session' as const,
    settings: {},
    compactionCount: 0,
    transformCount: 0,
    turnCount: 0,
    activeTurnId: null,
    parentTurnId: null,
    parentMessageCount: null,
    agentId: null,
    createdAt: conversation.createdAt,
    updatedAt: conversation.updatedAt,
  };
  const rootId = conversation.id;
  const rootOwn = rootPath.filter((id) => nodes.get(id)!.message !== null);
  const root: Built = {
    line: {
      ...base,
      id: rootId,
      kind: 'ROOT',
      title: conversation.title,
      metadata: conversation.metadata,
      parentId: null,
      rootId,
      ancestorIds: [],
      depth: 0,
      forkIndex: null,
      forkPointMessageId: null,
      lineage: [],
      messageCount: rootOwn.length,
    },
    path: rootPath,
    visible: rootOwn,
    roles: rootOwn.map((id) => nodes.get(id)!.message!.role),
    ownFrom: 0,
  };
  emit(
    root.line,
    rootOwn.map((id, i) => messageLine(rootId, id, i, nodes.get(id)!.message!)),
  );
  const queue: Built[] = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (let i = parent.ownFrom; i < parent.path.length; i++) {
      const node = nodes.get(parent.path[i])!;
      const keptBefore = parent.path.slice(0, i + 1).filter((id) => nodes.get(id)!.message !== null).length;
      for (const child of node.children) {
        if (child === parent.path[i + 1] || !nodes.has(child)) continue;
        // The cut: the last USER message at or before the branch, within the parent's messages.
        let cut = Math.min(keptBefore, parent.visible.length - 1);
        while (cut >= 0 && parent.roles[cut] !== 'USER') cut--;
        if (cut < 0) continue;
        const branch = pathFrom(nodes, child);
        const path = [...parent.path.slice(0, i + 1), ...branch];
        const repeated = parent.visible.slice(cut, keptBefore);
        const ownNodes = [...repeated, ...branch.filter((id) => nodes.get(id)!.message !== null)];
        const id = `${rootId}/${child}`;
        const forkIndex = cut;
        const line: SessionLine = {
          ...base,
          id,
          kind: 'FORK',
          title: `${conversation.title} (fork ${++forks})`,
          metadata: { ...conversation.metadata, branch: child },
          parentId: parent.line.id,
          rootId,
          ancestorIds: [...parent.line.ancestorIds, parent.line.id],
          depth: parent.line.depth + 1,
          forkIndex,
          forkPointMessageId: parent.visible[cut],
          lineage: childLineage({ ...parent.line, compactionCount: 0, transformCount: 0 }, forkIndex),
          messageCount: forkIndex + ownNodes.length,
          createdAt: nodes.get(child)!.message?.createdAt ?? conversation.createdAt,
        };
        const ownIds = ownNodes.map((nodeId, k) => (k < repeated.length ? `${nodeId}@${id}` : nodeId));
        emit(
          line,
          ownNodes.map((nodeId, k) => messageLine(id, ownIds[k], forkIndex + k, nodes.get(nodeId)!.message!)),
        );
        queue.push({
          line,
          path,
          visible: [...parent.visible.slice(0, forkIndex), ...ownIds],
          roles: [...parent.roles.slice(0, forkIndex), ...ownNodes.map((n) => nodes.get(n)!.message!.role)],
          ownFrom: i + 1,
        });
      }
    }
  }
  return { lines: out, messages, sessions: forks + 1 };
}

function lastLeaf(nodes: Map<string, ForeignNode>): string | null {
  let found: string | null = null;
  for (const node of nodes.values()) if (node.children.length === 0) found = node.id;
  return found;
}

/** A whole export file of these conversations (header, lines, end). */
export function exportFileOf(conversations: ForeignConversation[]): string {
  const parts: string[] = [];
  let sessions = 0;
  let messages = 0;
  for (const conversation of conversations) {
    const built = conversationLines(conversation);
    parts.push(...built.lines);
    sessions += built.sessions;
    messages += built.messages;
  }
  const header = {
    type: 'header',
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: new Date().toISOString(),
    sessionId: conversations[0]?.id ?? '',
    tree: true,
  };
  return [JSON.stringify(header), ...parts, JSON.stringify({ type: 'end', sessions, messages })].join('\n') + '\n';
}
