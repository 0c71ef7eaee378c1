// The next context: how full it is (the gauge, from stored counts), and assembleContext for a chosen
// format, model, budget and cache strategy, message by message, with what the provider's prompt cache
// can reuse of it and what it would cost.
import { request } from './api.js';
import { AssembleContext, ContextGauge } from './documents.js';
import { cost, count, h } from './format.js';
import type { CacheStrategy, ContextFormat, ExplorerAssembleMutation, ExplorerGaugeQuery } from '../generated/graphql.js';
import { errorBox } from './sessions.js';

const FORMATS: ContextFormat[] = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
const STRATEGIES: CacheStrategy[] = ['STABLE_PREFIX', 'NEWEST_FIRST'];
const ROLES = ['system', 'summary', 'user', 'assistant', 'tool', 'attachments'] as const;
type Gauge = NonNullable<ExplorerGaugeQuery['session']>['contextGauge'];
type Assembled = ExplorerAssembleMutation['assembleContext'];

const percent = (part: number, whole: number) => `${Math.round((100 * part) / Math.max(whole, 1))}%`;

/** The gauge: a bar of the budget split by role (no budget: the split alone), and how many messages fit before a drop. */
function renderGauge(gauge: Gauge): HTMLElement {
  const whole = Math.max(gauge.maxTokens ?? gauge.usedTokens, gauge.usedTokens, 1);
  const segments = ROLES.filter((role) => gauge.byRole[role] > 0).map((role) => {
    const segment = h('span', { class: `segment role-${role}`, title: `${role}: ${count(gauge.byRole[role])} tokens` });
    // Through the CSSOM: the page's CSP refuses style attributes.
    segment.style.width = `${((100 * gauge.byRole[role]) / whole).toFixed(2)}%`;
    return segment;
  });
  const until =
    gauge.messagesUntilDrop === null || gauge.messagesUntilDrop === undefined
      ? ''
      : gauge.messagesUntilDrop === 0
        ? ' · the oldest messages are dropped now'
        : ` · about ${count(gauge.messagesUntilDrop)} more messages before the oldest are dropped`;
  return h(
    'div',
    { class: 'gauge', 'data-used': gauge.usedTokens },
    h(
      'div',
      { class: 'gauge-bar', role: 'meter', 'aria-label': 'Context used', 'aria-valuenow': gauge.usedTokens, 'aria-valuemax': whole },
      ...segments,
    ),
    h(
      'p',
      { class: 'gauge-figures' },
      `${count(gauge.usedTokens)} tokens`,
      gauge.maxTokens
        ? ` of ${count(gauge.maxTokens)} (${percent(gauge.usedTokens, gauge.maxTokens)})`
        : ' (no budget: give one or a model)',
      ` · ${count(gauge.messageCount)} messages`,
      until,
    ),
    h('p', { class: 'gauge-roles muted' }, ROLES.map((role) => `${role} ${count(gauge.byRole[role])}`).join(' · ')),
  );
}

/** What the provider's cache can serve of this call, and its price when a model was given. */
function renderReuse(c: Assembled): HTMLElement {
  const price = c.estimatedCost;
  return h(
    'p',
    { class: 'reuse' },
    h('span', { 'data-field': 'reused' }, `${count(c.reusedPrefixTokens)} tokens`),
    ` (${percent(c.reusedPrefixTokens, c.tokenCount)}) reused from the previous assembly in this format`,
    price
      ? h(
          'span',
          { 'data-field': 'estimated-cost' },
          ` · estimated input cost ${cost(price.total)} ${price.currency} (${cost(price.cachedInputCost)} cached, ${cost(price.inputCost)} new)`,
        )
      : '',
  );
}

function renderAssembled(c: Assembled): HTMLElement[] {
  return [
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
    renderReuse(c),
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
  ];
}

/**
 * The "Next context" panel. The gauge follows the form (format, model, budget) and the session's
 * messages (`messagesChanged`, read again at most once a second); Assemble builds the payload.
 */
export function contextPanel(sessionId: string): { element: HTMLElement; messagesChanged: () => void; stop: () => void } {
  const format = h('select', { 'aria-label': 'Format' }, ...FORMATS.map((f) => h('option', { value: f }, f)));
  const model = h('input', { type: 'text', placeholder: 'model (optional)', 'aria-label': 'Model', size: 22 });
  const budget = h('input', { type: 'number', min: 1, step: 1, placeholder: 'max tokens (none)', 'aria-label': 'Token budget' });
  const strategy = h('select', { 'aria-label': 'Cache strategy' }, ...STRATEGIES.map((s) => h('option', { value: s }, s)));
  const gauge = h('div', { class: 'gauge-box' });
  const out = h('div', {});
  const form = h('form', { class: 'context-form' }, format, model, budget, strategy, h('button', { type: 'submit' }, 'Assemble'));
  const choice = () => ({
    format: format.value as ContextFormat,
    model: model.value.trim() || null,
    maxTokens: budget.value ? Number(budget.value) : null,
  });

  let gaugeTimer: ReturnType<typeof setTimeout> | undefined;
  let asked = 0;
  const readGauge = async () => {
    const ask = ++asked;
    try {
      const { session } = await request(ContextGauge, { id: sessionId, ...choice() });
      // An answer to an older choice is dropped: the form changed meanwhile.
      if (ask === asked && session) gauge.replaceChildren(renderGauge(session.contextGauge));
    } catch (error) {
      if (ask === asked) gauge.replaceChildren(errorBox(error));
    }
  };
  const gaugeLater = (ms: number) => {
    clearTimeout(gaugeTimer);
    gaugeTimer = setTimeout(readGauge, ms);
  };
  for (const input of [format, model, budget]) input.addEventListener('change', () => gaugeLater(0));
  void readGauge();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const { assembleContext: c } = await request(AssembleContext, {
        input: { sessionId, ...choice(), cacheStrategy: strategy.value as CacheStrategy },
      });
      out.replaceChildren(...renderAssembled(c));
    } catch (error) {
      out.replaceChildren(errorBox(error));
    }
  });
  const element = h('section', { class: 'panel' }, h('h2', {}, 'Next context'), gauge, form, out);
  return { element, messagesChanged: () => gaugeLater(1_000), stop: () => clearTimeout(gaugeTimer) };
}
