// Writes the configuration table of docs/operations.md (between its config-table markers) from
// SETTINGS in src/config.ts; `npm run docs` runs it, and test/unit/config-table.test.ts fails when
// the page differs from what this prints.
import { readFileSync, writeFileSync } from 'node:fs';
import { SETTINGS, type Setting } from '../src/config.js';

export const CONFIG_TABLE_FILE = new URL('../docs/operations.md', import.meta.url);

const START = '<!-- config-table: generated from SETTINGS in src/config.ts by `npm run docs` -->';
const END = '<!-- /config-table -->';

function shownDefault(setting: Setting): string {
  if (setting.shown) return setting.shown;
  return setting.integer === undefined ? '—' : `\`${setting.integer}\``;
}

/** The Markdown table of every setting, in SETTINGS's order. */
export function configTable(): string {
  const rows = Object.entries(SETTINGS).map(
    ([name, setting]: [string, Setting]) => `| \`${name}\` | ${shownDefault(setting)} | ${setting.meaning} |`,
  );
  return ['| variable | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

/** `page` with the text between the markers replaced by `configTable()`; throws if a marker is missing. */
export function withConfigTable(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/operations.md must hold the lines "${START}" and "${END}", in that order.`);
  return `${page.slice(0, start + START.length)}\n${configTable()}\n${page.slice(end)}`;
}

export function writeConfigTable() {
  writeFileSync(CONFIG_TABLE_FILE, withConfigTable(readFileSync(CONFIG_TABLE_FILE, 'utf8')));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  writeConfigTable();
  console.log('wrote the configuration table of docs/operations.md');
}
