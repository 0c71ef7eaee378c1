// The explorer's entry: the key bar, and a hash router between the sessions list (#/) and a
// session (#/session/<id>, or #/session/<id>/<messageId> to open it at a message).
import { apiKey } from './api.js';
import { h } from './format.js';
import { showSession } from './session.js';
import { showSessions } from './sessions.js';

const main = document.getElementById('main')!;
let leave: (() => void) | undefined;

function route() {
  leave?.();
  leave = undefined;
  main.replaceChildren();
  const [, page, id, messageId] = location.hash.split('/');
  if (page === 'session' && id) leave = showSession(main, decodeURIComponent(id), messageId ? decodeURIComponent(messageId) : undefined);
  else showSessions(main);
}

function keyBar() {
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
