import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as packages from '../../src/packages/index.js';

const root = new URL('../..', import.meta.url).pathname;
const PACKAGES = [
  'graphql-yoga',
  '@graphql-yoga/plugin-csrf-prevention',
  '@pothos/core',
  '@pothos/plugin-prisma',
  '@pothos/plugin-relay',
  'graphql',
  'graphql-ws',
  'graphql-ws/use/ws',
  'ws',
  'dataloader',
  '@whatwg-node/server',
  '@graphql-yoga/plugin-persisted-operations',
  'prom-client',
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the dual packages (src/packages/index.ts)', () => {
  it('are their CommonJS builds, one copy each', () => {
    const require = createRequire(join(root, 'src/packages/index.ts'));
    expect(packages.SchemaBuilder).toBe(require('@pothos/core').default);
    expect(packages.RelayPlugin).toBe(require('@pothos/plugin-relay').default);
    expect(packages.PrismaPlugin).toBe(require('@pothos/plugin-prisma').default);
    expect(packages.createYoga).toBe(require('graphql-yoga').createYoga);
    expect(packages.useCSRFPrevention).toBe(require('@graphql-yoga/plugin-csrf-prevention').useCSRFPrevention);
    expect(packages.GraphQLError).toBe(require('graphql').GraphQLError);
    expect(packages.parseMessage).toBe(require('graphql-ws').parseMessage);
    expect(packages.useServer).toBe(require('graphql-ws/use/ws').useServer);
    expect(packages.WebSocketServer).toBe(require('ws').WebSocketServer);
    expect(packages.DataLoader).toBe(require('dataloader'));
    expect(packages.sendNodeResponse).toBe(require('@whatwg-node/server').sendNodeResponse);
    expect(packages.usePersistedOperations).toBe(require('@graphql-yoga/plugin-persisted-operations').usePersistedOperations);
    expect(packages.Registry).toBe(require('prom-client').Registry);
  });

  it('reach the rest of src/ only through it: elsewhere only their types are imported', () => {
    const offending: string[] = [];
    for (const file of sources(join(root, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/^import\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)';/gms)) {
        const [, typeOnly, clause, from] = match;
        if (!PACKAGES.includes(from) || typeOnly) continue;
        // `import { type A, type B } from …` is erased too.
        const named = /^\{([^}]*)\}$/.exec(clause.trim());
        if (named?.[1].split(',').every((name) => !name.trim() || name.trim().startsWith('type '))) continue;
        offending.push(`${relative(root, file)}: ${match[0].replace(/\s+/g, ' ')}`);
      }
      // A dynamic import loads the ES module build: a second copy.
      for (const [, from] of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) {
        if (PACKAGES.includes(from)) offending.push(`${relative(root, file)}: import('${from}')`);
      }
    }
    expect(offending.filter((line) => !line.startsWith('src/packages/index.ts'))).toEqual([]);
  });
});
