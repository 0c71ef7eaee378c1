import { DEFAULT_PAGE, MAX_CONNECTION_PAGE } from '../domain/pagination.js';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import SchemaBuilder from '@pothos/core';
import { PothosError } from '@pothos/core';
import type { RequestContext } from '../graphql/context.js';
import { getDatamodel } from '../generated/pothos-types.js';
import type PrismaTypes from '../generated/pothos-types.js';
import type { PrismaClient } from '../generated/prisma/client.js';

/**
 * The schema extension that makes an unused Prisma query an error in the schema that carries it
 * (`withDevelopmentChecks`, what buildApp serves outside production); elsewhere one passes. A
 * property of the schema each app serves, so no module state decides it.
 */
export const UNUSED_QUERY_IS_ERROR = 'unusedPrismaQueryIsError';

/**
 * The Pothos builder, configured once. The Prisma client comes from each request's context
 * (`ctx.prisma`), so one schema serves any database the app is built with.
 */
export const builder = new SchemaBuilder<{
  Context: RequestContext;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  Scalars: {
    JSON: { Input: unknown; Output: unknown };
    DateTime: { Input: Date; Output: Date | string };
    /** A file of a GraphQL multipart request (Yoga's `File`). */
    File: { Input: { size: number; name: string; type: string; arrayBuffer(): Promise<ArrayBuffer> }; Output: never };
  };
}>({
  plugins: [PrismaPlugin, RelayPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (ctx) => ctx.prisma as PrismaClient,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: (info) => {
      if (info.schema.extensions[UNUSED_QUERY_IS_ERROR]) {
        throw new PothosError(`Prisma query was unused in resolver for ${info.parentType.name}.${info.fieldName}`);
      }
    },
    maxConnectionSize: MAX_CONNECTION_PAGE,
    defaultConnectionSize: DEFAULT_PAGE,
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: {
      description:
        'Fetches any object by its global ID (Session, Message, Turn, Attachment). Null when it does not exist in your workspace.',
    },
    nodesQueryOptions: false,
    nodeTypeOptions: { description: 'An object with a global, opaque ID that `node(id:)` resolves.' },
    pageInfoTypeOptions: { description: 'Where a page lies in its connection.' },
    hasNextPageFieldOptions: { description: 'True when items follow this page.' },
    hasPreviousPageFieldOptions: { description: 'True when items precede this page.' },
    startCursorFieldOptions: {
      description: 'Cursor of the first item of the page; of a page left empty by the answer budget, the cursor it was asked from.',
    },
    endCursorFieldOptions: {
      description:
        'Cursor of the last item of the page; of a page left empty by the answer budget, the cursor it was asked from (page on from it).',
    },
    firstArgOptions: { description: 'Page size from the start (or after `after`).' },
    lastArgOptions: { description: 'Page size from the end (or before `before`).' },
    afterArgOptions: { description: 'Return items after this cursor.' },
    beforeArgOptions: { description: 'Return items before this cursor.' },
  },
});

builder.queryType({ description: 'Reads: sessions, their messages and forks, turns.' });
builder.mutationType({ description: 'Writes. Each mutation takes one input object; a refused one writes nothing.' });
builder.subscriptionType({ description: 'Live events of a session, with replay after a known sequence number.' });

/** The builder's schema types, as Pothos completed them (what a ref declared ahead of its type names). */
export type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer Types> ? Types : never;
