import type { GraphQLSchema } from 'graphql';
import { decodeGlobalID, encodeGlobalID } from '@pothos/plugin-relay';
import { isObjectType } from 'graphql';
import { badInput, notFound } from '../graphql/errors.js';
import { UUID_PATTERN } from '../db/ids.js';
import type { NodeTypeName } from '../domain/global-ids.js';

export { type NodeTypeName, toGlobalId } from '../domain/global-ids.js';

/**
 * Decodes an opaque global ID of the expected type. A string that is no global ID at all is bad
 * input; a well-formed ID of another type, or one that cannot exist, is simply not found.
 */
export function parseGlobalId(raw: string, expected: NodeTypeName, argument: string): string {
  let decoded: { typename: string; id: string };
  try {
    decoded = decodeGlobalID(raw);
  } catch {
    throw badInput(`${argument} "${truncate(raw)}" is not a valid ${expected} ID.`);
  }
  if (!decoded.typename || !decoded.id) throw badInput(`${argument} "${truncate(raw)}" is not a valid ${expected} ID.`);
  if (decoded.typename !== expected || !UUID_PATTERN.test(decoded.id)) throw notFound(expected, raw);
  return decoded.id;
}

const truncate = (s: string) => (s.length > 80 ? `${s.slice(0, 77)}...` : s);

/** Each node type's raw ID, as its definition gives it (`prismaNode`'s `id.field`, `node`'s `id.resolve`). */
export const NODE_RAW_IDS: Record<NodeTypeName, (parent: Record<string, unknown>) => unknown> = {
  Session: (session) => session.id,
  Message: (message) => message.id,
  Turn: (turn) => turn.id,
  Attachment: (attachment) => attachment.attachmentId,
};

/**
 * Every node's `id` answered synchronously. The relay plugin resolves it with an async function
 * (its `t.globalID` around the node's own id resolver): a promise per ID, which graphql-js (and
 * graphql-jit) finish in later microtasks. Answered here, a subscription event that selects its
 * message's `id` executes synchronously (each subscriber after the first is written to at once),
 * and a page of messages holds no promise. The string is the same (`encodeGlobalID` of the type
 * name and the raw ID); a parent without a string raw ID keeps the plugin's resolver.
 */
export function syncNodeIds(schema: GraphQLSchema): GraphQLSchema {
  for (const [typename, rawId] of Object.entries(NODE_RAW_IDS)) {
    const type = schema.getType(typename);
    const field = isObjectType(type) ? type.getFields().id : undefined;
    const plugin = field?.resolve;
    if (!field || !plugin) throw new Error(`The node type ${typename} has no id field to resolve.`);
    field.resolve = (parent, args, context, info) => {
      const id = rawId(parent as Record<string, unknown>);
      return typeof id === 'string' ? encodeGlobalID(typename, id) : plugin(parent, args, context, info);
    };
  }
  return schema;
}
