// A turn: status, each agent's status and usage, and its sub-agent sessions.
import type { ExplorerTurnFragment, ExplorerUsageFragment } from '../generated/graphql.js';
import { costOf, count, h, time } from './format.js';
import { sessionHref } from './sessions.js';

const usageCells = (u: ExplorerUsageFragment) => [
  h('td', { class: 'num', 'data-field': 'input' }, count(u.inputTokens)),
  h('td', { class: 'num', 'data-field': 'output' }, count(u.outputTokens)),
  h('td', { class: 'num', 'data-field': 'cache-read' }, count(u.cacheReadTokens)),
  h('td', { class: 'num', 'data-field': 'cache-write' }, count(u.cacheWriteTokens)),
  h('td', { class: 'num', 'data-field': 'cost' }, costOf(u)),
];

export function renderTurn(turn: ExplorerTurnFragment): HTMLElement {
  const status = turn.status.toLowerCase();
  const rows = turn.agents.map((agent) =>
    h(
      'tr',
      { 'data-agent': agent.agentId },
      h('th', {}, agent.agentId),
      h('td', { 'data-field': 'status' }, h('span', { class: `badge status-${agent.status.toLowerCase()}` }, agent.status.toLowerCase())),
      ...usageCells(agent.usage),
      h('td', { class: 'error' }, agent.error ?? ''),
    ),
  );
  const subSessions = turn.subSessions.edges.map(({ node }) =>
    h(
      'li',
      {},
      h('a', { href: sessionHref(node.id) }, node.title || '(untitled)'),
      ` sub-agent ${node.agentId ?? ''} · ${count(node.messageCount)} messages`,
    ),
  );
  return h(
    'article',
    { class: 'turn', 'data-id': turn.id, 'data-status': turn.status },
    h(
      'h3',
      {},
      `Turn ${turn.number} `,
      h('span', { class: `badge status-${status}` }, status),
      h(
        'span',
        { class: 'muted' },
        ' started ',
        time(turn.startedAt),
        turn.completedAt ? ' · ended ' : '',
        turn.completedAt ? time(turn.completedAt) : null,
      ),
    ),
    turn.error ? h('p', { class: 'error' }, turn.error) : null,
    h(
      'table',
      { class: 'usage' },
      h(
        'thead',
        {},
        h('tr', {}, ...['agent', 'status', 'input', 'output', 'cache read', 'cache write', 'cost', ''].map((label) => h('th', {}, label))),
      ),
      h('tbody', {}, ...rows),
      h('tfoot', {}, h('tr', { 'data-agent': '' }, h('th', {}, 'total'), h('td', {}), ...usageCells(turn.usage), h('td', {}))),
    ),
    subSessions.length ? h('div', {}, h('h4', {}, 'Sub-agent sessions'), h('ul', {}, ...subSessions)) : null,
  );
}
