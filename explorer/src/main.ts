// The explorer's entry: the key bar, and a hash router between the sessions list (#/) and a
// session (#/session/<id>, or #/session/<id>/<messageId> to open it at a message). A share link's
// URL (#share=<token>&session=<id>) opens that one session, read-only.
import { apiKey, shared } from './api.js';
import { h } from './format.js';
import { showSession } from './session.js';
import { showSessions } from './sessions.js';

const main = document.getElementById('main')!;
let leave: (() => void) | undefined;

function route() {
  leave?.();
  leave = undefined;
  main.replaceChildren();
  if (shared.take()) keyBar();
  const [, page, id, messageId] = location.hash.split('/');
  const only = shared.sessionId();
  if (only) leave = showSession(main, only, page === 'session' && messageId ? decodeURIComponent(messageId) : undefined, true);
  else if (page === 'session' && id)
    leave = showSession(main, decodeURIComponent(id), messageId ? decodeURIComponent(messageId) : undefined);
  else showSessions(main);
}

function keyBar() {
  if (shared.sessionId()) {
    const leaveShare = h('button', { type: 'button' }, 'Use a key instead');
    leaveShare.addEventListener('click', () => {
      shared.leave();
      location.hash = '#/';
      keyBar();
      route();
    });
    document.getElementById('key')!.replaceChildren(h('p', { class: 'key shared' }, 'Shared session, read-only. ', leaveShare));
    return;
  }
  const input = h('input', {
    type: 'password',
    placeholder: 'API key (when the server requires one)',
    'aria-label': 'API key',
    value: apiKey.get(),
  });
  const form = h(
    'form',
    {
      class: 'key',
      onsubmit: (event) => {
        event.preventDefault();
        apiKey.set(input.value.trim());
        route();
      },
    },
    input,
    h('button', { type: 'submit' }, 'Use key'),
    h('small', {}, 'kept in this tab only'),
  );
  document.getElementById('key')!.replaceChildren(form);
}

keyBar();
addEventListener('hashchange', route);
route();
