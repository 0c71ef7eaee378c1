import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_TABLE_FILE, configTable, withConfigTable } from '../../scripts/print-config.js';
import { SETTINGS } from '../../src/config.js';

describe("docs/operations.md's configuration table", () => {
  it('is what `npm run docs` prints from SETTINGS in src/config.ts', () => {
    const page = readFileSync(CONFIG_TABLE_FILE, 'utf8');
    expect(page).toBe(withConfigTable(page));
  });

  it('has one row per setting, about 20 of them', () => {
    const rows = configTable().split('\n').slice(2);
    expect(rows.map((row) => /^\| `(\w+)` \|/.exec(row)?.[1])).toEqual(Object.keys(SETTINGS));
    // 28: the scale-out settings (REDIS_CLUSTER_NODES, DATABASE_REPLICA_URLS) are the contract's; a new
    // setting beyond them should replace one, or be a constant.
    expect(rows.length).toBeLessThanOrEqual(28);
  });

  it('refuses a page without its markers', () => {
    expect(() => withConfigTable('# no table here\n')).toThrow(/config-table/);
  });
});
