// One session: its header, fork tree, live turns, messages (with "fork here") and the next context.
import { follow, objectUrl, request } from './api.js';
import { AppendMessage, SessionCosts, SessionEvents, SessionView, SharedSessionEvents, SharedSessionView } from './documents.js';
import { costOf, count, h, time } from './format.js';
import type {
  ExplorerCostsFragment,
  ExplorerMessageFragment,
  ExplorerSessionQuery,
  ExplorerSharedSessionQuery,
  ExplorerSharedTurnFragment,
  ExplorerTurnFragment,
} from '../generated/graphql.js';
import { forkTree } from './fork-tree.js';
import { contextPanel } from './context.js';
import { renderTurn } from './turn.js';
import { errorBox, sessionHref } from './sessions.js';
import { forkHere, takeDraft } from './fork.js';

/** The session as the view shows it; a share link reads no costs (treeUsage is not its to read). */
type SessionData = Omit<NonNullable<ExplorerSessionQuery['session']>, 'usage' | 'treeUsage'> & Partial<ExplorerCostsFragment>;

/** A turn as the read-only view reads it: without sub-agent sessions (a share link reads its one session). */
const withoutSubSessions = (turn: ExplorerSharedTurnFragment): ExplorerTurnFragment => ({ ...turn, subSessions: { edges: [] } });

/** The read-only view's session in the shape of the full one: no parent, sub-agent turn or fork tree to show. */
function fromShared(session: NonNullable<ExplorerSharedSessionQuery['session']>): SessionData {
  return {
    ...session,
    parent: null,
    parentTurn: null,
    root: { id: session.id },
    activeTurn: session.activeTurn ? withoutSubSessions(session.activeTurn) : null,
    turns: { ...session.turns, edges: session.turns.edges.map((e) => ({ node: withoutSubSessions(e.node) })) },
  };
}

/** The session as the view reads it: with a share link, through the documents a share token may run. */
async function readSession(id: string, after: string | null, readOnly: boolean): Promise<SessionData | null> {
  if (!readOnly) return (await request(SessionView, { id, after })).session ?? null;
  const { session } = await request(SharedSessionView, { id, after });
  return session ? fromShared(session) : null;
}

/** Follows the session's events, with the read-only documents for a share link. */
function followSession(
  id: string,
  readOnly: boolean,
  onEvent: (event: { __typename: string; message?: ExplorerMessageFragment | null; turn?: ExplorerTurnFragment | null }) => void,
  onError: (error: unknown) => void,
  onConnected: () => void,
) {
  if (!readOnly)
    return follow(
      SessionEvents,
      { sessionId: id, afterSequence: null },
      (d) => d.sessionEvents.sequence,
      (d) => onEvent(d.sessionEvents),
      onError,
      onConnected,
    );
  return follow(
    SharedSessionEvents,
    { sessionId: id, afterSequence: null },
    (d) => d.sessionEvents.sequence,
    ({ sessionEvents: e }) => onEvent({ ...e, turn: 'turn' in e && e.turn ? withoutSubSessions(e.turn) : null }),
    onError,
    onConnected,
  );
}

/**
 * Shows session `id` (scrolled to `messageId` when given); returns what stops its live stream.
 * `readOnly` (a share link): no fork tree, no fork or send, no context panel.
 */
export function showSession(main: HTMLElement, id: string, messageId?: string, readOnly = false): () => void {
  const messages = h('ol', { class: 'messages' });
  const turns = h('div', { class: 'turns' });
  const live = h('span', { class: 'badge', id: 'live' }, 'connecting…');
  const costs = h('p', { class: 'costs' });
  let nextContext: ReturnType<typeof contextPanel> | undefined;
  let stopped = false;
  let stop = () => {};

  const upsert = (list: HTMLElement, key: string, element: HTMLElement, before = false) => {
    const existing = list.querySelector(`[data-id="${CSS.escape(key)}"]`);
    if (existing) existing.replaceWith(element);
    else if (before) list.prepend(element);
    else list.append(element);
  };

  // Subscribed before the first read: an event that lands meanwhile is in the read or comes after
  // it; each carries the whole message or turn, so applying it again changes nothing.
  stop = followSession(
    id,
    readOnly,
    (event) => {
      live.textContent = 'live';
      if ((event.__typename === 'MessageAdded' || event.__typename === 'MessageUpdated') && event.message) {
        upsert(messages, event.message.id, renderMessage(event.message, id, readOnly));
        nextContext?.messagesChanged();
      } else if (event.turn) {
        upsert(turns, event.turn.id, renderTurn(event.turn), true);
        if (!readOnly) refreshCosts();
      }
    },
    (error) => {
      live.textContent = 'disconnected';
      messages.before(errorBox(error));
    },
    () => (live.textContent = 'live'),
  );

  // The header's costs follow usage reports: read again at most once a second, after the last event.
  let costTimer: ReturnType<typeof setTimeout> | undefined;
  const refreshCosts = () => {
    clearTimeout(costTimer);
    costTimer = setTimeout(async () => {
      const answer = await request(SessionCosts, { id }).catch(() => null);
      if (answer?.session && !stopped) showCosts(costs, answer.session);
    }, 1_000);
  };

  void (async () => {
    try {
      const session = await readSession(id, null, readOnly);
      if (stopped) return;
      if (!session) {
        main.replaceChildren(h('p', { class: 'error' }, 'No such session in this workspace.'), h('a', { href: '#/' }, 'All sessions'));
        return;
      }
      showCosts(costs, session);
      if (!readOnly) nextContext = contextPanel(session.id);
      main.replaceChildren(
        header(session, live, readOnly, costs),
        readOnly ? '' : h('section', { class: 'panel' }, h('h2', {}, 'Fork tree'), forkTree(session.root.id, session.id)),
        h('section', { class: 'panel' }, h('h2', {}, 'Turns'), turns),
        readOnly ? '' : (takeDraft(session.id, (text) => sendDraft(session.id, text)) ?? ''),
        h('section', { class: 'panel' }, h('h2', {}, `Messages (${count(session.messageCount)})`), messages),
        nextContext?.element ?? '',
      );
      const shown = [...session.turns.edges.map((e) => e.node)].reverse();
      if (session.activeTurn && !shown.some((t) => t.id === session.activeTurn!.id)) shown.unshift(session.activeTurn);
      for (const turn of shown) upsert(turns, turn.id, renderTurn(turn));
      if (shown.length === 0) turns.append(h('p', { class: 'muted' }, 'No turns yet.'));
      await loadMessages(session, messages, session.messages, readOnly);
      if (messageId) {
        const target = messages.querySelector(`[data-id="${CSS.escape(messageId)}"]`);
        target?.classList.add('target');
        target?.scrollIntoView({ block: 'center' });
      }
    } catch (error) {
      main.replaceChildren(errorBox(error));
    }
  })();
  main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  return () => {
    stopped = true;
    clearTimeout(costTimer);
    nextContext?.stop();
    stop();
  };
}

async function loadMessages(session: SessionData, list: HTMLElement, page: SessionData['messages'], readOnly: boolean) {
  for (const { node } of page.edges) {
    if (!list.querySelector(`[data-id="${CSS.escape(node.id)}"]`)) list.append(renderMessage(node, session.id, readOnly));
  }
  if (page.pageInfo.hasNextPage) {
    const more = h('button', { type: 'button' }, 'More messages');
    more.addEventListener('click', async () => {
      more.remove();
      const next = await readSession(session.id, page.pageInfo.endCursor ?? null, readOnly);
      if (next) await loadMessages(session, list, next.messages, readOnly);
    });
    list.after(more);
  }
}

async function sendDraft(sessionId: string, text: string) {
  await request(AppendMessage, { input: { sessionId, messages: [{ role: 'USER', text }] } });
}

/** What this session's own turns cost (sub-agents included), and its whole fork tree. */
function showCosts(element: HTMLElement, session: Partial<ExplorerCostsFragment>) {
  if (!session.usage || !session.treeUsage) return;
  element.replaceChildren(
    'cost: ',
    h('span', { 'data-field': 'session-cost' }, costOf(session.usage)),
    ' this session · ',
    h('span', { 'data-field': 'tree-cost' }, costOf(session.treeUsage)),
    ' its fork tree',
  );
}

function header(session: SessionData, live: HTMLElement, readOnly: boolean, costs: HTMLElement): HTMLElement {
  const origin = session.parent
    ? h(
        'span',
        {},
        'forked from ',
        h('a', { href: sessionHref(session.parent.id) }, session.parent.title),
        ` at message #${session.forkIndex}`,
      )
    : session.parentTurn
      ? h(
          'span',
          {},
          `sub-agent ${session.agentId ?? ''} in turn ${session.parentTurn.number} of `,
          h('a', { href: sessionHref(session.parentTurn.session.id) }, session.parentTurn.session.title),
        )
      : null;
  return h(
    'header',
    { class: 'session' },
    readOnly ? h('span', { class: 'badge' }, 'shared, read-only') : h('a', { href: '#/' }, '← All sessions'),
    h(
      'h1',
      {},
      session.title || '(untitled)',
      ' ',
      h('span', { class: `badge kind-${session.kind.toLowerCase()}` }, session.kind.toLowerCase()),
    ),
    h('p', { class: 'muted' }, 'created ', time(session.createdAt), origin ? ' · ' : '', origin, ' · ', live),
    costs,
  );
}

type AttachmentView = Extract<ExplorerMessageFragment['parts'][number], { __typename: 'AttachmentPart' }>['attachment'];

/**
 * An image held as bytes: a thumbnail (its bytes read with the tab's key); any other file: a chip
 * that opens the bytes, or the URL, in a new tab. A provider's file has nothing here to open.
 */
function renderAttachment(a: AttachmentView): HTMLElement {
  const label = `${a.name} (${a.mimeType}${a.size ? `, ${count(a.size)} bytes` : ''}${a.width ? `, ${a.width}×${a.height}` : ''})`;
  const open = (event: Event) => {
    event.preventDefault();
    const tab = window.open('about:blank', '_blank');
    objectUrl(a.url).then(
      (href) => {
        if (tab) tab.location.href = href;
      },
      () => tab?.close(),
    );
  };
  if (a.kind === 'BYTES' && a.mimeType.startsWith('image/')) {
    const img = h('img', { class: 'thumbnail', alt: a.name, title: label, width: 160 });
    objectUrl(a.url).then(
      (href) => {
        img.src = href;
      },
      () => img.replaceWith(h('span', { class: 'muted' }, `${a.name} (could not be loaded)`)),
    );
    return h('figure', { class: 'attachment image' }, h('a', { href: a.url, onclick: open }, img), h('figcaption', {}, label));
  }
  if (a.kind === 'URL' && a.sourceUrl) {
    return h('a', { class: 'attachment file-chip', href: a.sourceUrl, target: '_blank', rel: 'noopener noreferrer' }, `🔗 ${label}`);
  }
  if (a.kind === 'PROVIDER_FILE' && a.providerFile) {
    return h('span', { class: 'attachment file-chip', title: `${a.providerFile.provider} file ${a.providerFile.fileId}` }, `☁ ${label}`);
  }
  return h('a', { class: 'attachment file-chip', href: a.url, onclick: open }, `📎 ${label}`);
}

function renderPart(part: ExplorerMessageFragment['parts'][number]): HTMLElement | null {
  switch (part.__typename) {
    case 'ToolCallPart':
      return h(
        'details',
        { class: 'tool-call' },
        h('summary', {}, `tool call ${part.name}`, h('code', {}, ` ${part.callId}`)),
        h('pre', {}, JSON.stringify(part.arguments, null, 2)),
      );
    case 'ToolResultPart':
      return h(
        'details',
        { class: part.isError ? 'tool-result failed' : 'tool-result' },
        h('summary', {}, part.isError ? 'tool result: failed ' : 'tool result ', h('code', {}, part.callId)),
        h('pre', {}, part.content),
      );
    case 'AttachmentPart':
      return renderAttachment(part.attachment);
    case 'ReasoningPart':
      // Folded, as a tool call: the model's reasoning, readable on demand; redacted reasoning has nothing to read.
      return part.redacted
        ? h('div', { class: 'reasoning redacted' }, 'reasoning (redacted by the provider)')
        : h('details', { class: 'reasoning' }, h('summary', {}, 'reasoning'), h('pre', {}, part.text || '(no readable text)'));
    case 'ProviderPart':
      return h(
        'details',
        { class: 'provider-part' },
        h('summary', {}, `${part.provider} block `, h('code', {}, String((part.data as { type?: unknown }).type ?? ''))),
        h('pre', {}, JSON.stringify(part.data, null, 2)),
      );
    default:
      return null;
  }
}

/** Reasoning comes before what it led to (the message's text), as the model produced it. */
const isReasoning = (part: ExplorerMessageFragment['parts'][number]) => part.__typename === 'ReasoningPart';

function renderMessage(m: ExplorerMessageFragment, sessionId: string, readOnly: boolean): HTMLElement {
  const badges = [
    m.hidden ? h('span', { class: 'badge hidden', title: m.hiddenReason ?? '' }, `hidden: ${m.hiddenReason ?? ''}`) : null,
    m.redacted ? h('span', { class: 'badge redacted' }, 'redacted') : null,
    m.generating ? h('span', { class: 'badge live' }, 'generating') : null,
    m.agentId ? h('span', { class: 'badge' }, m.agentId) : null,
  ];
  return h(
    'li',
    { class: `message role-${m.role.toLowerCase()}`, 'data-id': m.id, value: m.index + 1 },
    h(
      'div',
      { class: 'meta' },
      h('strong', {}, m.role.toLowerCase()),
      ` #${m.index} · `,
      time(m.createdAt),
      ` · ${count(m.tokenCount)} tokens `,
      ...badges,
      m.role === 'USER' && !readOnly ? forkHere(sessionId, m.index) : null,
    ),
    m.redacted ? h('p', { class: 'replacement' }, `sent as: ${m.redaction?.replacement ?? ''}`) : null,
    ...m.parts.filter(isReasoning).map(renderPart),
    m.text ? h('div', { class: 'text' }, m.text) : null,
    ...m.parts.filter((part) => !isReasoning(part)).map(renderPart),
  );
}
