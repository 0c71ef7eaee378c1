import { readFileSync } from 'node:fs';
import { type GraphQLInterfaceType, type GraphQLObjectType, type GraphQLResolveInfo, execute, parse, printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE } from '../../scripts/print-schema.js';
import { DEFAULT_STRING_CHARS, textCaps } from '../../src/domain/limits.js';
import { decodeGlobalID } from '@pothos/plugin-relay';
import { NODE_RAW_IDS, type NodeTypeName, toGlobalId } from '../../src/schema/ids.js';
import { builder } from '../../src/schema/builder.js';
import { schema, withDevelopmentChecks } from '../../src/schema/index.js';

describe('schema.graphql', () => {
  it('is the printed schema (run `npm run schema:print` after changing the schema)', () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    expect(committed).toBe(printSchema(schema) + '\n');
  });

  it('makes an unused Prisma query an error only in the schema with development checks, which has the same types', () => {
    const checked = withDevelopmentChecks(schema);
    expect(checked.getType('Session')).toBe(schema.getType('Session'));
    expect(printSchema(checked)).toBe(printSchema(schema));
    const onUnusedQuery = builder.options.prisma?.onUnusedQuery as (info: GraphQLResolveInfo) => void;
    const info = (of: typeof schema) =>
      ({ schema: of, parentType: { name: 'Query' }, fieldName: 'session' }) as unknown as GraphQLResolveInfo;
    expect(() => onUnusedQuery(info(checked))).toThrow('Prisma query was unused in resolver for Query.session');
    expect(() => onUnusedQuery(info(schema))).not.toThrow();
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

describe('node ids', () => {
  const NOW = '2026-11-26T12:00:00.000Z';
  const context = { caps: textCaps(DEFAULT_STRING_CHARS.postgres) };
  const idOf = (typename: string, parent: Record<string, unknown>) => {
    const type = schema.getType(typename) as GraphQLObjectType;
    const field = type.getFields().id;
    return field.resolve!(parent, {}, context, {} as GraphQLResolveInfo);
  };

  it('covers every type that implements Node', () => {
    const nodes = schema.getPossibleTypes(schema.getType('Node') as GraphQLInterfaceType).map((t) => t.name);
    expect(nodes.sort()).toEqual(Object.keys(NODE_RAW_IDS).sort());
  });

  it("answers each node's id at once, the relay plugin's encoding of its raw id", async () => {
    const parents: Record<string, Record<string, unknown>> = {
      Session: { id: 's-1' },
      Message: { id: 'm-1' },
      Turn: { id: 't-1' },
      Attachment: { attachmentId: 'a-1' },
    };
    for (const [typename, parent] of Object.entries(parents)) {
      const id = idOf(typename, parent);
      expect(typeof id).toBe('string');
      expect(decodeGlobalID(id as string)).toEqual({ typename, id: Object.values(parent)[0] });
      // The plugin's own resolver (kept for a parent whose raw id is no string) encodes the same way.
      const numeric = { ...parent, [Object.keys(parent)[0]]: 42 };
      const plugin = idOf(typename, numeric);
      expect(plugin).toBeInstanceOf(Promise);
      expect(await plugin).toBe(toGlobalId(typename as NodeTypeName, '42'));
    }
  });

  it('executes a live event with its message synchronously (each subscriber after the first is written to at once)', () => {
    const event = {
      id: 'e-1',
      sessionId: 's-1',
      sequence: 5,
      type: 'MESSAGE_ADDED',
      turnId: null,
      messageId: 'm-1',
      payload: { index: 3 },
      createdAt: NOW,
      message: {
        id: 'm-1',
        sessionId: 's-1',
        position: 3,
        role: 'ASSISTANT',
        parts: [{ type: 'text', text: 'hello' }],
        generating: false,
        tokensO200k: 1,
        turnId: null,
        agentId: null,
        createdAt: NOW,
        updatedAt: NOW,
      },
    };
    const document = parse(`subscription ($id: ID!) {
      sessionEvents(sessionId: $id) { sequence __typename ... on MessageAdded { index message { id role text tokenCount } } }
    }`);
    const result = execute({
      schema,
      document,
      rootValue: event,
      contextValue: context,
      variableValues: { id: toGlobalId('Session', 's-1') },
    });
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toEqual({
      data: {
        sessionEvents: {
          sequence: 5,
          __typename: 'MessageAdded',
          index: 3,
          message: { id: toGlobalId('Message', 'm-1'), role: 'ASSISTANT', text: 'hello', tokenCount: 1 },
        },
      },
    });
  });
});
