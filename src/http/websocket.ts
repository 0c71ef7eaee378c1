import type { IncomingMessage, Server } from 'node:http';
import type { DocumentNode, ExecutionArgs, ExecutionResult } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { WebSocket } from 'ws';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import { stringInterner } from '../caches/interner.js';
import { asServiceUnavailable, isOutage } from '../db/faults.js';
import { asClientError } from '../graphql/client-errors.js';
import type { RequestContext } from '../graphql/context.js';
import { DomainError, domainErrorOf, toGraphQLError } from '../graphql/errors.js';
import type { Logger } from '../logger.js';
import { getOperationAST, GraphQLError } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { StreamMask } from '../live/pump-stream.js';
import type { SubscriptionSharing } from '../live/sharing.js';
import { webSocketSink } from '../live/ws-sink.js';
import type { SubscriptionTracker } from '../live/subscription-tracker.js';
import { useWebSocketServer } from '../live/ws-server.js';
import { authorizationFrom, rateLimitedBody, takeRate } from './guards.js';
import type { RateLimiter } from './rate-limit.js';
import type { ServerMetrics } from './metrics.js';
import type { TrustedDocuments } from './trusted-documents.js';

/** WebSocket close code 1001 (RFC 6455 "going away"): the server is shutting down. */
const CLOSE_GOING_AWAY = 1001;

export interface GraphQLWebSocketOptions {
  /**
   * Which server speaks graphql-transport-ws: `own`, ours (`useWebSocketServer`), whose
   * subscriptions write their results to the socket through subscription sharing
   * (`subscribeToSocket`); or `graphql-ws`, graphql-ws's own `useServer`, every operation run
   * through envelop (`execute`, `subscribe`), as Yoga's recipe does (`Deviations.ownWebSocketServer`).
   */
  transport: 'own' | 'graphql-ws';
  server: Server;
  yoga: YogaServerInstance<Record<string, unknown>, RequestContext>;
  /** Largest frame, in bytes (the HTTP body cap). */
  maxPayload: number;
  /** Distinct query texts kept once each (the subscription shapes bound; our own server only). */
  maxQueryTexts: number;
  limiter: RateLimiter;
  auth: WorkspaceAuth;
  logger: Logger;
  sharing: Pick<SubscriptionSharing, 'subscribeToSocket'>;
  subscriptions: SubscriptionTracker;
  streamMask: StreamMask;
  /** Answer an unexpected error with a generic message (production) instead of its own. */
  hideInternalErrors: boolean;
  /** Counts the errors of the results and refusals sent over the socket, as Yoga's path counts its own. */
  metrics?: Pick<ServerMetrics, 'countResult' | 'countErrors'>;
  /** Trusted documents: a subscribe message names one (its `query` empty), or sends text only where allowed. */
  trusted?: TrustedDocuments | null;
}

type Enveloped = ReturnType<YogaServerInstance<Record<string, unknown>, RequestContext>['getEnveloped']>;

/**
 * graphql-ws on the app's server, at Yoga's endpoint: a connection is authenticated at
 * `connection_init`; each subscribe is rate limited (the same `takeRate` as HTTP), gets its
 * request context, and is parsed and validated through envelop as Yoga would. On our own server
 * queries and mutations execute through envelop, subscriptions through subscription sharing
 * (outside envelop: masked by `streamMask`, tracked for shutdown); on graphql-ws's `useServer`
 * everything runs through envelop. `close()` completes every operation and closes every socket
 * with 1001.
 */
export function useGraphQLWebSocket(options: GraphQLWebSocketOptions) {
  const { server, yoga, limiter, auth, logger, metrics, trusted } = options;
  // A frame is bounded as an HTTP body is (ws's own default is 100 MiB): a larger one closes the
  // socket with 1009.
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint, maxPayload: options.maxPayload });
  /** A refusal of a subscribe message, counted. */
  const refused = (errors: readonly GraphQLError[]) => {
    metrics?.countErrors(errors);
    return errors as GraphQLError[];
  };
  const steps: AdmissionSteps = {
    // Refuse at connection_init (4403 Forbidden) rather than acknowledge a connection that can do nothing.
    async connect(connectionParams, upgradeAuthorization, socket) {
      try {
        await auth.workspaceFor(authorizationFrom(undefined, connectionParams, upgradeAuthorization));
        return true;
      } catch (error) {
        const code = domainErrorOf(error)?.code;
        if (code === 'UNAUTHENTICATED') return false;
        if (code === 'SERVICE_UNAVAILABLE' || isOutage(error)) {
          logger.warn('dependency unavailable', { error, during: 'WebSocket connection_init' });
          // 1013 Try Again Later: graphql-ws clients treat it as retryable (the 4403 that follows is not sent: the socket is closing).
          socket.close(1013, 'SERVICE_UNAVAILABLE: the database is unavailable; retry shortly');
          return false;
        }
        throw error;
      }
    },
    async admit(params, authorization, remoteAddress) {
      const decision = await takeRate(limiter, authorization, remoteAddress);
      if (!decision.allowed) {
        const { message, extensions } = rateLimitedBody(decision.retryAfterSeconds);
        const { code, ...details } = extensions;
        return refused([toGraphQLError(new DomainError(code, message, details))]);
      }
      if (!trusted) return null;
      try {
        (params as { query: string }).query = await trusted.resolve(params as never, authorization);
      } catch (error) {
        if (error instanceof DomainError) return refused([toGraphQLError(error)]);
        throw error;
      }
      return null;
    },
    async prepare({ contextFactory, parse, validate, schema }, params) {
      let contextValue: RequestContext;
      try {
        contextValue = (await contextFactory()) as unknown as RequestContext;
      } catch (error) {
        if (error instanceof GraphQLError) return refused([error]);
        if (error instanceof DomainError) return refused([toGraphQLError(error)]);
        const unavailable = asServiceUnavailable(error);
        if (unavailable) return refused([toGraphQLError(unavailable)]);
        throw error;
      }
      let document: DocumentNode;
      try {
        document = parse(params.query);
      } catch (error) {
        const clientError = asClientError(error);
        if (clientError) return refused([clientError]);
        throw error;
      }
      const errors = validate(schema, document);
      if (errors.length) return refused(errors.map((e: GraphQLError) => asClientError(e) ?? e));
      return { document, contextValue };
    },
  };
  const wsServer = options.transport === 'own' ? ownServer(options, wss, steps) : graphqlWsServer(options, wss, steps);
  return {
    /** Open graphql-ws connections. */
    connections: () => wss.clients.size,
    /** Closes every socket (1001) once its operations completed, then stops the WebSocket server. */
    async close() {
      for (const client of wss.clients) client.close(CLOSE_GOING_AWAY, 'Server shutting down');
      await wsServer.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** What both servers do with a connection and a subscribe message, in the order they do it. */
interface AdmissionSteps {
  /** `connection_init`: whether the key (connectionParams, else the upgrade request's header) is good; false closes with 4403, or 1013 when it cannot be checked. */
  connect(connectionParams: Record<string, unknown> | undefined, upgradeAuthorization: string | null, socket: WebSocket): Promise<boolean>;
  /** Rate limit and trusted documents (the listed document's text set as `params.query`): errors to answer with, or null. */
  admit(params: SubscribePayload, authorization: string | null, remoteAddress: string | undefined): Promise<GraphQLError[] | null>;
  /** The request context, the parsed and validated document: errors to answer with, or both. */
  prepare(
    enveloped: Enveloped,
    params: SubscribePayload,
  ): Promise<GraphQLError[] | { document: DocumentNode; contextValue: RequestContext }>;
}

/** Our own graphql-transport-ws server (`useWebSocketServer`): see `Deviations.ownWebSocketServer`. */
function ownServer(options: GraphQLWebSocketOptions, wss: WebSocketServer, steps: AdmissionSteps) {
  const { sharing, subscriptions, streamMask, metrics } = options;
  // graphql-ws keeps each operation's message (and so its query) for as long as the operation
  // runs, and clients of one application subscribe with the same few documents: one copy of each
  // text, applied in onSubscribe (a `jsonMessageReviver` would run for every key of every message).
  const shareQueryText = stringInterner(options.maxQueryTexts);
  return useWebSocketServer(
    {
      hideInternalErrors: options.hideInternalErrors,
      execute: async (args) => {
        const result = (await (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args)) as ExecutionResult;
        if (!isAsyncIterable(result)) metrics?.countResult(result);
        return result as never;
      },
      subscribe: async (args, ctx, id) => {
        const result = await sharing.subscribeToSocket(args, webSocketSink(ctx.extra.socket, id), streamMask);
        if (isAsyncIterable(result)) return subscriptions.track(result);
        metrics?.countResult(result as ExecutionResult);
        return result as ExecutionResult;
      },
      onConnect: (ctx) => steps.connect(ctx.connectionParams, ctx.extra.authorization, ctx.extra.socket),
      onSubscribe: async (ctx, _id, params) => {
        if (typeof params.query === 'string') (params as { query: string }).query = shareQueryText(params.query);
        const authorization = authorizationFrom(undefined, ctx.connectionParams, ctx.extra.authorization);
        const refusal = await steps.admit(params, authorization, ctx.extra.remoteAddress);
        if (refusal) return refusal;
        if (options.trusted) (params as { query: string }).query = shareQueryText(params.query);
        // Only what the request context function reads, and the operation: the request context
        // built on this object lives as long as the subscription, so the rest of the connection's
        // state (the socket, its operations table) is left out of it.
        const enveloped = options.yoga.getEnveloped({ connectionParams: ctx.connectionParams, extra: ctx.extra, params });
        const prepared = await steps.prepare(enveloped, params);
        if (Array.isArray(prepared)) return prepared;
        // A subscription runs outside envelop and keeps its arguments for as long as it lasts:
        // only queries and mutations take envelop's execute along.
        const subscription = getOperationAST(prepared.document, params.operationName)?.operation === 'subscription';
        return {
          schema: enveloped.schema,
          operationName: params.operationName,
          document: prepared.document,
          variableValues: params.variables,
          contextValue: prepared.contextValue,
          rootValue: subscription ? undefined : { execute: enveloped.execute },
        };
      },
    },
    wss,
  );
}

/**
 * graphql-ws's own `useServer` (`graphql-ws/use/ws`), as Yoga's graphql-ws recipe wires it: the
 * execution args built from `yoga.getEnveloped` with the connection, the upgrade request (`req`)
 * and the socket, so every plugin runs as for HTTP (auth, key scopes, limits, masking, subscription
 * sharing, shutdown tracking), and queries, mutations and subscriptions executed by envelop's
 * `execute` and `subscribe`. Its own keep-alive (12 s), init timeout (3 s) and close codes.
 */
function graphqlWsServer(options: GraphQLWebSocketOptions, wss: WebSocketServer, steps: AdmissionSteps) {
  const { metrics } = options;
  const counted = async (result: unknown) => {
    const settled = await result;
    if (!isAsyncIterable(settled)) metrics?.countResult(settled as ExecutionResult);
    return settled as ExecutionResult;
  };
  const envelopedOf = (args: ExecutionArgs) => args.rootValue as Pick<Enveloped, 'execute' | 'subscribe'>;
  return useServer(
    {
      isProd: options.hideInternalErrors,
      execute: (args) => counted(envelopedOf(args).execute(args)),
      subscribe: (args) => counted(envelopedOf(args).subscribe(args)),
      onConnect: (ctx) => steps.connect(ctx.connectionParams, ctx.extra.request.headers.authorization ?? null, ctx.extra.socket),
      onSubscribe: async (ctx, _id, params) => {
        const request: IncomingMessage = ctx.extra.request;
        const authorization = authorizationFrom(undefined, ctx.connectionParams, request.headers.authorization);
        const refusal = await steps.admit(params, authorization, request.socket.remoteAddress);
        if (refusal) return refusal;
        const enveloped = options.yoga.getEnveloped({ ...ctx, req: request, socket: ctx.extra.socket, params });
        const prepared = await steps.prepare(enveloped, params);
        if (Array.isArray(prepared)) return prepared;
        return {
          schema: enveloped.schema,
          operationName: params.operationName,
          document: prepared.document,
          variableValues: params.variables,
          contextValue: prepared.contextValue,
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        };
      },
    },
    wss,
  );
}
