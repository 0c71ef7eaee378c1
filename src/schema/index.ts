import { builder } from './builder.js';
import { syncNodeIds } from './ids.js';
import { validateArguments } from './validate-args.js';
import './scalars.js';
import './turn.js';
import './attachment.js';
import './message.js';
import './session.js';
import './session-mutations.js';
import './compaction.js';
import './fork.js';
import './assembly.js';
import './events.js';
import './transforms.js';
import './turn-events.js';
import './search.js';
import './provider-messages.js';
import { lexicographicSortSchema } from '../packages/index.js';

/**
 * The whole GraphQL schema, with types sorted so the printed SDL is stable, every field's
 * arguments checked by the one input validator before its resolver runs, and every node's `id`
 * resolved synchronously.
 */
export const schema = syncNodeIds(validateArguments(lexicographicSortSchema(builder.toSchema())));
