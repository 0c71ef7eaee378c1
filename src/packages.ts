/**
 * The CommonJS builds of the dual (CommonJS and ES module) packages the server is built on. Node 20
 * loads a CommonJS graph in about half the time of the same graph as ES modules (synchronous
 * resolution, no linking per module): graphql-yoga, its CSRF plugin and Pothos with its plugins take
 * ~170 ms instead of ~330 on this machine, a sixth of a PGlite server's start.
 *
 * Every value imported from these packages comes from here (types may come from the packages), so
 * each is loaded once, as one copy: Pothos's plugins register themselves on the core they require,
 * and its context caches live in that core's module.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const { createYoga, isAsyncIterable } = require('graphql-yoga') as typeof import('graphql-yoga');
export const { useCSRFPrevention } =
  require('@graphql-yoga/plugin-csrf-prevention') as typeof import('@graphql-yoga/plugin-csrf-prevention');
export const {
  default: SchemaBuilder,
  PothosError,
  createContextCache,
  initContextCache,
} = require('@pothos/core') as typeof import('@pothos/core');
export const { default: PrismaPlugin } = require('@pothos/plugin-prisma') as typeof import('@pothos/plugin-prisma');
export const {
  default: RelayPlugin,
  decodeGlobalID,
  encodeGlobalID,
  resolveArrayConnection,
} = require('@pothos/plugin-relay') as typeof import('@pothos/plugin-relay');
