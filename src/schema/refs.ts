import type { PrismaObjectRef } from '@pothos/plugin-prisma';
import type PrismaTypes from '../generated/pothos-types.js';
import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import { getRefFromModel } from '@pothos/plugin-prisma';
import { builder, type BuilderTypes } from './builder.js';

/**
 * The object types that type files refer to across each other, declared ahead of their
 * implementation so no type file imports another for its ref: `session.ts` implements Session and
 * `message.ts` Message (each with `prismaNode`, which implements this same ref, the one Pothos keeps
 * per model). A type file imports the refs it returns from here.
 */
export const Session = getRefFromModel('Session', builder, 'object') as PrismaObjectRef<BuilderTypes, PrismaTypes['Session'], SessionRow>;
export const Message = getRefFromModel('Message', builder, 'object') as PrismaObjectRef<BuilderTypes, PrismaTypes['Message'], MessageRow>;
