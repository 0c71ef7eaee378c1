import { lexicographicSortSchema } from 'graphql';
import { builder } from './builder.js';
import './scalars.js';
import './turn.js';
import './message.js';
import './session.js';
import './assembly.js';
import './events.js';
import './turn-events.js';

/** The whole GraphQL schema, with types sorted so the printed SDL is stable. */
export const schema = lexicographicSortSchema(builder.toSchema());
