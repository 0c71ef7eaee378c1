import { readFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE } from '../../scripts/print-schema.js';
import { schema } from '../../src/schema/index.js';

describe('schema.graphql', () => {
  it('is the printed schema (run `npm run schema:print` after changing the schema)', () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    expect(committed).toBe(printSchema(schema) + '\n');
  });

  it('describes every public type and field', () => {
    const missing: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__') || ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(type.name)) continue;
      if (!type.description) missing.push(type.name);
      if ('getFields' in type) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description && !['id', 'cursor', 'node', 'edges', 'pageInfo', 'totalCount'].includes(field.name)) {
            missing.push(`${type.name}.${field.name}`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
