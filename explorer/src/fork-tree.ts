// The fork tree of a session's root, drawn as one column per session over message indexes: a fork's
// column starts at its fork point, joined to its parent's column there. Click a column to open it.
import { request } from './api.js';
import { SessionForks } from './documents.js';
import { cost, h } from './format.js';
import { sessionHref } from './sessions.js';

interface TreeNode {
  id: string;
  title: string;
  messageCount: number;
  forkIndex?: number | null;
  /** The session's own turns' usage (a fork's cost without its parent's). */
  usage: { cost: number; costSource: 'CATALOG' | 'REPORTED' | 'UNKNOWN' };
  children: TreeNode[];
}

/** Most sessions drawn: a larger tree is cut (and says so). */
const MAX_SESSIONS = 60;
const SVG = 'http://www.w3.org/2000/svg';
const COLUMN = 180;
const TOP = 36;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, ...children: (Node | string)[]) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

async function readTree(rootId: string): Promise<{ root: TreeNode; cut: boolean }> {
  const { session } = await request(SessionForks, { id: rootId });
  if (!session) throw new Error('The root session is gone.');
  const root: TreeNode = { ...session, children: [] };
  let level = [root];
  let seen = 1;
  let cut = false;
  while (level.length) {
    const next: TreeNode[] = [];
    const answers = await Promise.all(level.map((node) => request(SessionForks, { id: node.id })));
    answers.forEach((answer, i) => {
      for (const { node } of answer.session?.forks.edges ?? []) {
        if (seen >= MAX_SESSIONS) {
          cut = true;
          return;
        }
        seen++;
        const child: TreeNode = { ...node, children: [] };
        level[i].children.push(child);
        next.push(child);
      }
    });
    level = next;
  }
  return { root, cut };
}

/** "A very long title (fork 3)" → "A very l…title (fork 3)": the fork number stays visible. */
const shortTitle = (title: string) => (title.length <= 28 ? title : `${title.slice(0, 13)}…${title.slice(-14)}`);

export function forkTree(rootId: string, currentId: string): HTMLElement {
  const box = h('div', { class: 'fork-tree' }, h('p', { class: 'muted' }, 'Loading the fork tree…'));
  void readTree(rootId).then(
    ({ root, cut }) => {
      const columns: { node: TreeNode; parent: number | null }[] = [];
      const walk = (node: TreeNode, parent: number | null) => {
        const index = columns.push({ node, parent }) - 1;
        for (const child of node.children) walk(child, index);
      };
      walk(root, null);
      const deepest = Math.max(1, ...columns.map((c) => c.node.messageCount));
      const row = Math.max(3, Math.min(14, 240 / deepest));
      const y = (index: number) => TOP + index * row;
      const x = (column: number) => 20 + column * COLUMN;
      const drawing = svg('svg', {
        width: x(columns.length - 1) + COLUMN,
        height: y(deepest) + 16,
        role: 'img',
        'aria-label': 'Fork tree',
      });
      columns.forEach(({ node, parent }, column) => {
        const start = node.forkIndex ?? 0;
        const end = Math.max(start, node.messageCount - 1);
        const group = svg('a', { href: sessionHref(node.id), class: node.id === currentId ? 'current' : '' });
        const spent = `${cost(node.usage.cost)}${node.usage.costSource === 'UNKNOWN' ? ' + ?' : ''}`;
        group.append(svg('title', {}, `${node.title} · ${node.messageCount} messages · ${spent} in its own turns`));
        if (parent !== null) {
          // From the parent's last message before the cut; a cut inside what the parent itself
          // inherited starts at the parent's head.
          const px = x(parent);
          const from = y(Math.max(start - 1, columns[parent].node.forkIndex ?? 0));
          group.append(
            svg('path', { d: `M${px},${from} C${px},${y(start)} ${x(column)},${from} ${x(column)},${y(start)}`, class: 'branch' }),
          );
        }
        group.append(svg('line', { x1: x(column), y1: y(start), x2: x(column), y2: y(end), class: 'trunk' }));
        // The session's head (a fork's first own index, even before it has a message), then its messages.
        group.append(svg('circle', { cx: x(column), cy: y(start), r: 5, class: 'head' }));
        for (let i = start; i < node.messageCount && i - start < 60; i++) group.append(svg('circle', { cx: x(column), cy: y(i), r: 3 }));
        group.append(svg('text', { x: x(column) - 6, y: y(start) - 8 }, shortTitle(node.title || '(untitled)')));
        group.append(svg('text', { x: x(column) + 10, y: y(start) + 4, class: 'cost', 'data-session': node.id }, spent));
        drawing.append(group);
      });
      box.replaceChildren(drawing, cut ? h('p', { class: 'muted' }, `Only the first ${MAX_SESSIONS} sessions are drawn.`) : '');
    },
    (error: Error) => box.replaceChildren(h('p', { class: 'error' }, error.message)),
  );
  return box;
}
