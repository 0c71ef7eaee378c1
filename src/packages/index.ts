/**
 * The packages the server loads at every start, loaded as CommonJS: a CommonJS graph resolves
 * synchronously with no linking per module, and an ES module importing a CommonJS-only package
 * (graphql, ws, dataloader) would make Node run its export lexer over it at every start.
 *
 * Every value imported from these packages comes from here (types may come from the packages;
 * test/unit/packages.test.ts keeps it so), so each is loaded once, as one copy: Pothos's plugins
 * register themselves on the core they require, and its context caches live in that core's module.
 */
import { createRequire } from 'node:module';
import type DataLoaderClass from 'dataloader';

const require = createRequire(import.meta.url);

export const { createYoga, isAsyncIterable, processRegularResult } = require('graphql-yoga') as typeof import('graphql-yoga');
export const { sendNodeResponse } = require('@whatwg-node/server') as typeof import('@whatwg-node/server');
export const { useCSRFPrevention } =
  require('@graphql-yoga/plugin-csrf-prevention') as typeof import('@graphql-yoga/plugin-csrf-prevention');
export const { usePersistedOperations } =
  require('@graphql-yoga/plugin-persisted-operations') as typeof import('@graphql-yoga/plugin-persisted-operations');
export const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = require('prom-client') as typeof import('prom-client');
export const {
  default: SchemaBuilder,
  PothosError,
  createContextCache,
  initContextCache,
} = require('@pothos/core') as typeof import('@pothos/core');
export const { default: PrismaPlugin, getRefFromModel } = require('@pothos/plugin-prisma') as typeof import('@pothos/plugin-prisma');
export const {
  default: RelayPlugin,
  decodeGlobalID,
  encodeGlobalID,
  resolveArrayConnection,
} = require('@pothos/plugin-relay') as typeof import('@pothos/plugin-relay');

const graphql = require('graphql') as typeof import('graphql');
export const {
  GraphQLError,
  GraphQLSchema,
  Kind,
  NoSchemaIntrospectionCustomRule,
  createSourceEventStream,
  execute,
  getNamedType,
  getOperationAST,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  lexicographicSortSchema,
  parse,
  print,
  visit,
} = graphql;
export type GraphQLError = import('graphql').GraphQLError;
export type GraphQLSchema = import('graphql').GraphQLSchema;
export type Kind = import('graphql').Kind;
export const { WebSocketServer } = require('ws') as typeof import('ws');
export type WebSocketServer = import('ws').WebSocketServer;
export const DataLoader = require('dataloader') as typeof import('dataloader');
export type DataLoader<K, V, C = K> = DataLoaderClass<K, V, C>;
export const { CloseCode, GRAPHQL_TRANSPORT_WS_PROTOCOL, MessageType, handleProtocols, parseMessage, stringifyMessage } =
  require('graphql-ws') as typeof import('graphql-ws');
export const { useServer } = require('graphql-ws/use/ws') as typeof import('graphql-ws/use/ws');
export type CloseCode = import('graphql-ws').CloseCode;
export type MessageType = import('graphql-ws').MessageType;
