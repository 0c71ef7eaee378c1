// "Fork here": forks before a USER message and opens the fork with that message in an editor.
import { request } from './api.js';
import { ForkSession } from './documents.js';
import { h } from './format.js';
import { errorBox, sessionHref } from './sessions.js';

const draftItem = (sessionId: string) => `session-graph.draft.${sessionId}`;

/** The button on a USER message at `index`. */
export function forkHere(sessionId: string, index: number): HTMLElement {
  const button = h('button', { type: 'button', class: 'fork-here', title: 'Fork before this message and edit it' }, 'fork here');
  button.addEventListener('click', async () => {
    try {
      const { forkSession } = await request(ForkSession, { input: { sessionId, messageIndex: index } });
      sessionStorage.setItem(draftItem(forkSession.session.id), forkSession.excludedMessage.text);
      location.hash = sessionHref(forkSession.session.id);
    } catch (error) {
      button.after(errorBox(error));
    }
  });
  return button;
}

/** The editor of a fork just made, holding the message it left out; null when there is none. */
export function takeDraft(sessionId: string, send: (text: string) => Promise<void>): HTMLElement | null {
  const draft = sessionStorage.getItem(draftItem(sessionId));
  if (draft === null) return null;
  const editor = h('textarea', { rows: 4, 'aria-label': 'Message to send in this fork' });
  editor.value = draft;
  const panel = h(
    'form',
    { class: 'panel draft' },
    h('h2', {}, 'Edit the message this fork left out'),
    editor,
    h('button', { type: 'submit' }, 'Send as USER'),
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          sessionStorage.removeItem(draftItem(sessionId));
          panel.remove();
        },
      },
      'Discard',
    ),
  );
  panel.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await send(editor.value);
      sessionStorage.removeItem(draftItem(sessionId));
      panel.remove();
    } catch (error) {
      panel.append(errorBox(error));
    }
  });
  return panel;
}
