// How the explorer shows numbers, times and elements.

const integer = new Intl.NumberFormat('en-US');
const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 4 });
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** 1234567 → "1,234,567". */
export const count = (n: number) => integer.format(n);
const small = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumSignificantDigits: 2 });
/** A cost in dollars, up to 4 decimals; under a cent, 2 significant digits ("$0.000036"), so a cheap call is not "$0.00". */
export const cost = (n: number) => (n > 0 && n < 0.01 ? small.format(n) : money.format(n));

type CostSource = 'CATALOG' | 'REPORTED' | 'UNKNOWN';
const COST_SOURCES: Record<CostSource, string> = {
  REPORTED: 'as reported with the usage',
  CATALOG: 'priced from the model catalog (USD), or reported and priced',
  UNKNOWN: 'partly unknown: some calls came with no cost and no model the catalog knows (counted as 0)',
};

/**
 * A usage's cost as an element saying where it comes from (its tooltip, and `data-source`): a sum
 * with a call of unknown cost reads "$0.0123 + ?".
 */
export const costOf = (usage: { cost: number; costSource: CostSource }) =>
  h(
    'span',
    { class: `cost source-${usage.costSource.toLowerCase()}`, title: COST_SOURCES[usage.costSource], 'data-source': usage.costSource },
    cost(usage.cost),
    usage.costSource === 'UNKNOWN' ? ' + ?' : '',
  );

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400],
  ['month', 30 * 86_400],
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
];

/** "3 minutes ago", "yesterday". */
export function ago(iso: string, now = Date.now()): string {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') return relative.format(Math.round(seconds / size), unit);
  }
  return iso;
}

type Child = Node | string | null | undefined | false;

/** An element with attributes (`on…` functions become listeners) and children (strings as text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number | boolean | ((event: Event) => void) | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

/** An element showing a time relatively, with the exact time as its tooltip. */
export const time = (iso: string) => h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, ago(iso));
