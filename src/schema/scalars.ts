import type { ValueNode } from 'graphql';
import { builder } from './builder.js';
import { GraphQLError, Kind } from 'graphql';

function literalToJson(node: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => literalToJson(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literalToJson(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[node.name.value];
    default:
      throw new GraphQLError('Not a JSON value.');
  }
}

/** A file Yoga read from a multipart request: a WHATWG `File` (on Node 20 the fetch ponyfill's, not `globalThis.File`). */
const isUploadedFile = (value: unknown): value is { size: number; name: string; type: string; arrayBuffer(): Promise<ArrayBuffer> } =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { arrayBuffer?: unknown }).arrayBuffer === 'function' &&
  typeof (value as { size?: unknown }).size === 'number';

builder.scalarType('File', {
  description:
    'A file sent in a GraphQL multipart request (github.com/jaydenseric/graphql-multipart-request-spec), as Apollo, urql and graphql-request upload clients send it. Input only.',
  serialize: () => {
    throw new GraphQLError('File is an input type only.');
  },
  parseValue: (value) => {
    if (!isUploadedFile(value))
      throw new GraphQLError('File must be a file of a multipart request (a variable mapped by its `map` field).');
    return value;
  },
  parseLiteral: () => {
    throw new GraphQLError('File cannot be written in the query: send it as a variable of a multipart request.');
  },
});

builder.scalarType('JSON', {
  description: 'Any JSON value (object, array, string, number, boolean or null).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (isUploadedFile(value)) throw new GraphQLError('A file can only be sent where the schema takes a File.');
    return value;
  },
  parseLiteral: (node, variables) => literalToJson(node, variables),
});

builder.scalarType('DateTime', {
  description: 'A point in time as an ISO 8601 string in UTC, e.g. 2026-11-22T13:46:38.123Z.',
  serialize: (value) => (value instanceof Date ? value.toISOString() : new Date(value).toISOString()),
  parseValue: (value) => {
    const date = new Date(String(value));
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 string.');
    return date;
  },
});
