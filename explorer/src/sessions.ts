// The sessions list, newest first, paged, with search by title and over message text.
import { ApiError, request } from './api.js';
import { SearchMessages, SessionList } from './documents.js';
import { count, h, time } from './format.js';

const PAGE = 20;

/** A link to a session (at a message, when given). */
export const sessionHref = (id: string, messageId?: string) =>
  `#/session/${encodeURIComponent(id)}${messageId ? `/${encodeURIComponent(messageId)}` : ''}`;

/** Shows an error answer where the content would be; a missing key gets a hint. */
export function errorBox(error: unknown): HTMLElement {
  const code = error instanceof ApiError ? error.code : undefined;
  const hint = code === 'UNAUTHENTICATED' ? ' Paste an API key above.' : '';
  return h('p', { class: 'error', role: 'alert' }, `${error instanceof Error ? error.message : String(error)}${hint}`);
}

const kindBadge = (kind: string) => h('span', { class: `badge kind-${kind.toLowerCase()}` }, kind.replace('_', '-').toLowerCase());

export function showSessions(main: HTMLElement) {
  const title = h('input', { type: 'search', name: 'title', placeholder: 'Title contains…', 'aria-label': 'Search titles' });
  const text = h('input', { type: 'search', name: 'text', placeholder: 'Search messages…', 'aria-label': 'Search messages' });
  const results = h('div', { class: 'results' });
  const more = h('button', { type: 'button', hidden: true }, 'More');
  let loadMore: (() => Promise<void>) | undefined;
  more.addEventListener('click', () => void loadMore?.());

  async function listSessions(reset: boolean, after?: string) {
    const titleContains = title.value.trim() || null;
    try {
      const { sessions } = await request(SessionList, { first: PAGE, after, titleContains });
      if (reset) results.replaceChildren(h('p', { class: 'muted' }, `${count(sessions.totalCount)} sessions`));
      const list = h('ul', { class: 'sessions' });
      for (const { node } of sessions.edges) {
        list.append(
          h(
            'li',
            {},
            h('a', { href: sessionHref(node.id), class: 'title' }, node.title || '(untitled)'),
            ' ',
            kindBadge(node.kind),
            node.activeTurn ? h('span', { class: 'badge live' }, 'turn active') : null,
            h(
              'span',
              { class: 'muted' },
              ` ${count(node.messageCount)} messages · created `,
              time(node.createdAt),
              ' · updated ',
              time(node.updatedAt),
            ),
          ),
        );
      }
      results.append(list);
      more.hidden = !sessions.pageInfo.hasNextPage;
      loadMore = () => listSessions(false, sessions.pageInfo.endCursor ?? undefined);
    } catch (error) {
      results.replaceChildren(errorBox(error));
      more.hidden = true;
    }
  }

  async function searchText(reset: boolean, after?: string) {
    try {
      const { searchMessages } = await request(SearchMessages, { query: text.value, first: PAGE, after });
      if (reset) results.replaceChildren();
      if (reset && searchMessages.edges.length === 0) results.append(h('p', { class: 'muted' }, 'No message matches.'));
      const list = h('ul', { class: 'hits' });
      for (const hit of searchMessages.edges) {
        // The highlight is escaped HTML in which only <mark> is markup (searchMessages' contract).
        const snippet = h('span', { class: 'snippet' });
        snippet.innerHTML = hit.highlight;
        list.append(
          h(
            'li',
            {},
            h('a', { href: sessionHref(hit.session.id, hit.message.id), class: 'title' }, hit.session.title || '(untitled)'),
            ' ',
            kindBadge(hit.session.kind),
            h('span', { class: 'muted' }, ` #${hit.message.index} ${hit.message.role.toLowerCase()} · `, time(hit.message.createdAt)),
            h('div', {}, snippet),
          ),
        );
      }
      results.append(list);
      more.hidden = !searchMessages.pageInfo.hasNextPage;
      loadMore = () => searchText(false, searchMessages.pageInfo.endCursor ?? undefined);
    } catch (error) {
      results.replaceChildren(errorBox(error));
      more.hidden = true;
    }
  }

  const submit = (event: Event) => {
    event.preventDefault();
    if (text.value.trim()) void searchText(true);
    else void listSessions(true);
  };
  main.append(
    h('h1', {}, 'Sessions'),
    h('form', { class: 'search', onsubmit: submit }, title, text, h('button', { type: 'submit' }, 'Search')),
    results,
    more,
  );
  void listSessions(true);
}
