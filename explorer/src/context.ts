// The next context: assembleContext for a chosen format and budget, message by message.
import { request } from './api.js';
import { AssembleContext } from './documents.js';
import { count, h } from './format.js';
import type { ContextFormat } from '../generated/graphql.js';
import { errorBox } from './sessions.js';

const FORMATS: ContextFormat[] = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];

export function contextPanel(sessionId: string): HTMLElement {
  const format = h('select', { 'aria-label': 'Format' }, ...FORMATS.map((f) => h('option', { value: f }, f)));
  const budget = h('input', { type: 'number', min: 1, step: 1, placeholder: 'max tokens (none)', 'aria-label': 'Token budget' });
  const out = h('div', {});
  const form = h('form', { class: 'context-form' }, format, budget, h('button', { type: 'submit' }, 'Assemble'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const maxTokens = budget.value ? Number(budget.value) : null;
      const { assembleContext: c } = await request(AssembleContext, {
        input: { sessionId, format: format.value as ContextFormat, maxTokens },
      });
      out.replaceChildren(
        h(
          'p',
          {},
          `${count(c.tokenCount)} tokens`,
          c.maxTokens ? ` of ${count(c.maxTokens)}` : '',
          ` · ${c.encoding} · ${count(c.droppedMessageCount)} dropped · ${count(c.elidedToolResultCount)} tool results elided`,
          c.truncated ? ' · truncated' : '',
          c.summaryIncluded ? ' · summary included' : '',
          ' · hash ',
          h('code', {}, c.contextHash),
        ),
        h(
          'table',
          { class: 'decisions' },
          h('thead', {}, h('tr', {}, ...['#', 'decision', 'reason'].map((label) => h('th', {}, label)))),
          h(
            'tbody',
            {},
            ...c.decisions.map((d) =>
              h(
                'tr',
                { class: `decision-${d.decision.toLowerCase()}` },
                h('td', { class: 'num' }, String(d.index)),
                h('td', {}, d.decision),
                h('td', {}, d.reason),
              ),
            ),
          ),
        ),
        h(
          'table',
          { class: 'sent' },
          h('thead', {}, h('tr', {}, ...['sent', 'role', 'from #', 'tokens', 'text'].map((label) => h('th', {}, label)))),
          h(
            'tbody',
            {},
            ...c.messages.map((m) =>
              h(
                'tr',
                {},
                h('td', {}, m.kind.toLowerCase()),
                h('td', {}, m.role.toLowerCase()),
                h('td', { class: 'num' }, m.sourceIndex === null || m.sourceIndex === undefined ? '' : String(m.sourceIndex)),
                h('td', { class: 'num' }, count(m.tokenCount)),
                h('td', { class: 'text' }, m.text.length > 300 ? `${m.text.slice(0, 300)}…` : m.text),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      out.replaceChildren(errorBox(error));
    }
  });
  return h('section', { class: 'panel' }, h('h2', {}, 'Next context'), form, out);
}
