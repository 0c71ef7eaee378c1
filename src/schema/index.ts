import type { GraphQLSchema as Schema } from 'graphql';
import { builder, UNUSED_QUERY_IS_ERROR } from './builder.js';
import { syncNodeIds } from './ids.js';
import { validateArguments } from './validate-args.js';
import { withShareScope } from './share-scope.js';
import './share-link.js';
import './scalars.js';
import './turn.js';
import './attachment.js';
import './message.js';
import './session.js';
import './session-mutations.js';
import './compaction.js';
import './fork.js';
import './branches.js';
import './assembly.js';
import './model-catalog.js';
import './context-gauge.js';
import './events.js';
import './transforms.js';
import './turn-events.js';
import './search.js';
import './provider-messages.js';
import './import-sessions.js';
import { GraphQLSchema, lexicographicSortSchema } from 'graphql';

/**
 * The whole GraphQL schema, with types sorted so the printed SDL is stable, every field's
 * arguments checked by the one input validator before its resolver runs, and every node's `id`
 * resolved synchronously, and what a share token may reach fenced in (`share-scope.ts`).
 */
export const schema = withShareScope(syncNodeIds(validateArguments(lexicographicSortSchema(builder.toSchema()))));

/**
 * `base` with Pothos's development checks on: an unused Prisma query is an error (a resolver that
 * forgot to spread `query`). The same types and resolvers in a schema object of its own, which
 * buildApp serves outside production; `base` itself is left as it is.
 */
export function withDevelopmentChecks(base: Schema): Schema {
  return new GraphQLSchema({ ...base.toConfig(), extensions: { ...base.extensions, [UNUSED_QUERY_IS_ERROR]: true } });
}
