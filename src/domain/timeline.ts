/**
 * The flattened timeline of a session and the sub-agent sessions nested in its turns (cagent's
 * GetAllMessages): the session's messages in index order, with each sub-session's own timeline
 * inserted where it was made, that is after the parent messages that existed then
 * (`parentMessageCount`). Sub-sessions made at the same point keep their creation order. Pure:
 * positions are arithmetic over message counts, so a page reads only the messages it shows.
 */

/** A session of the tree as the timeline needs it. */
export interface TimelineNode {
  id: string;
  /** The session whose turn this sub-session runs in; null for the top session. */
  parentSessionId: string | null;
  /** Where its messages sit among its parent's (the parent's messageCount when it was made). */
  parentMessageCount: number;
  messageCount: number;
  /** Creation order among sub-sessions made at the same point. */
  order: number;
}

/** A run of consecutive timeline items that are messages [lo, hi) of one session. */
export interface TimelineRange {
  sessionId: string;
  /** How deep the session is below the top (0 for the top session). */
  depth: number;
  /** Timeline index of message `lo`. */
  start: number;
  lo: number;
  hi: number;
}

export interface Timeline {
  length: number;
  /** The ranges that overlap timeline items [from, to), in timeline order, clipped to it. */
  slice(from: number, to: number): TimelineRange[];
  /** Where timeline item `index` is; null outside [0, length). */
  at(index: number): TimelineRange | null;
}

interface Built {
  node: TimelineNode;
  depth: number;
  length: number;
  /** Children in timeline order with their clamped anchors. */
  children: { anchor: number; child: Built }[];
}

export function buildTimeline(topId: string, nodes: readonly TimelineNode[]): Timeline {
  const byParent = new Map<string, TimelineNode[]>();
  let top: TimelineNode | undefined;
  for (const node of nodes) {
    if (node.id === topId) top = node;
    else if (node.parentSessionId) {
      const list = byParent.get(node.parentSessionId) ?? [];
      list.push(node);
      byParent.set(node.parentSessionId, list);
    }
  }
  if (!top) throw new Error(`buildTimeline: no node ${topId}`);
  const build = (node: TimelineNode, depth: number, seen: Set<string>): Built => {
    seen.add(node.id);
    const children = (byParent.get(node.id) ?? [])
      .filter((child) => !seen.has(child.id))
      .map((child) => ({
        anchor: Math.max(0, Math.min(child.parentMessageCount, node.messageCount)),
        child: build(child, depth + 1, seen),
      }))
      .sort((a, b) => a.anchor - b.anchor || a.child.node.order - b.child.node.order);
    const length = node.messageCount + children.reduce((sum, c) => sum + c.child.length, 0);
    return { node, depth, length, children };
  };
  const root = build(top, 0, new Set());

  const slice = (from: number, to: number): TimelineRange[] => {
    const out: TimelineRange[] = [];
    const walk = (b: Built, start: number) => {
      // start: timeline index of b's first item. Items: own messages split by children anchors.
      let index = start;
      let position = 0;
      const own = (hi: number) => {
        const count = hi - position;
        const lo = Math.max(index, from);
        const end = Math.min(index + count, to);
        if (lo < end)
          out.push({ sessionId: b.node.id, depth: b.depth, start: lo, lo: position + (lo - index), hi: position + (end - index) });
        index += count;
        position = hi;
      };
      for (const { anchor, child } of b.children) {
        if (index >= to) return;
        own(anchor);
        if (index + child.length > from && index < to) walk(child, index);
        index += child.length;
      }
      if (index < to) own(b.node.messageCount);
    };
    if (from < to) walk(root, 0);
    return out;
  };

  return {
    length: root.length,
    slice,
    at(index) {
      if (!Number.isInteger(index) || index < 0 || index >= root.length) return null;
      return slice(index, index + 1)[0] ?? null;
    },
  };
}
