import type { Server } from 'node:http';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import { stringInterner } from '../caches/interner.js';
import { asServiceUnavailable, isOutage } from '../db/faults.js';
import { asClientError } from '../graphql/client-errors.js';
import type { RequestContext } from '../graphql/context.js';
import { DomainError, domainErrorOf, toGraphQLError } from '../graphql/errors.js';
import type { Logger } from '../logger.js';
import { getOperationAST, GraphQLError, isAsyncIterable, WebSocketServer } from '../packages/index.js';
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
  server: Server;
  yoga: YogaServerInstance<Record<string, unknown>, RequestContext>;
  /** Largest frame, in bytes (the HTTP body cap). */
  maxPayload: number;
  /** Distinct query texts kept once each (the subscription shapes bound). */
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

/**
 * graphql-ws on the app's server, at Yoga's endpoint: a connection is authenticated at
 * `connection_init`; each subscribe is rate limited (the same `takeRate` as HTTP), gets its
 * request context, and is parsed and validated through envelop as Yoga would; queries and
 * mutations execute through envelop, subscriptions through subscription sharing (outside envelop:
 * masked by `streamMask`, tracked for shutdown). `close()` completes every operation and closes
 * every socket with 1001.
 */
export function useGraphQLWebSocket(options: GraphQLWebSocketOptions) {
  const { server, yoga, limiter, auth, logger, sharing, subscriptions, streamMask, metrics, trusted } = options;
  /** A refusal of a subscribe message, counted. */
  const refused = (errors: readonly GraphQLError[]) => {
    metrics?.countErrors(errors);
    return errors as GraphQLError[];
  };
  // A frame is bounded as an HTTP body is (ws's own default is 100 MiB): a larger one closes the
  // socket with 1009. graphql-ws keeps each operation's message (and so its query) for as long as
  // the operation runs, and clients of one application subscribe with the same few documents: one
  // copy of each text, applied in onSubscribe (a `jsonMessageReviver` would run for every key of
  // every message).
  const shareQueryText = stringInterner(options.maxQueryTexts);
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint, maxPayload: options.maxPayload });
  const wsServer = useWebSocketServer(
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
      // Refuse at connection_init (4403 Forbidden) rather than acknowledge a connection that can do nothing.
      onConnect: async (ctx) => {
        try {
          await auth.workspaceFor(authorizationFrom(undefined, ctx.connectionParams, ctx.extra.authorization));
          return true;
        } catch (error) {
          const code = domainErrorOf(error)?.code;
          if (code === 'UNAUTHENTICATED') return false;
          if (code === 'SERVICE_UNAVAILABLE' || isOutage(error)) {
            logger.warn('dependency unavailable', { error, during: 'WebSocket connection_init' });
            // 1013 Try Again Later: graphql-ws clients treat it as retryable.
            ctx.extra.socket.close(1013, 'SERVICE_UNAVAILABLE: the database is unavailable; retry shortly');
            return false;
          }
          throw error;
        }
      },
      onSubscribe: async (ctx, _id, params) => {
        if (typeof params.query === 'string') (params as { query: string }).query = shareQueryText(params.query);
        const authorization = authorizationFrom(undefined, ctx.connectionParams, ctx.extra.authorization);
        const decision = await takeRate(limiter, authorization, ctx.extra.remoteAddress);
        if (!decision.allowed) {
          const { message, extensions } = rateLimitedBody(decision.retryAfterSeconds);
          const { code, ...details } = extensions;
          return refused([toGraphQLError(new DomainError(code, message, details))]);
        }
        if (trusted) {
          try {
            (params as { query: string }).query = shareQueryText(await trusted.resolve(params as never, authorization));
          } catch (error) {
            if (error instanceof DomainError) return refused([toGraphQLError(error)]);
            throw error;
          }
        }
        const {
          schema: envelopedSchema,
          execute,
          contextFactory,
          parse,
          validate,
          // Only what the request context function reads, and the operation: the request context
          // built on this object lives as long as the subscription, so the rest of graphql-ws's
          // connection state (the socket, its operations table) is left out of it.
        } = yoga.getEnveloped({ connectionParams: ctx.connectionParams, extra: ctx.extra, params });
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
        let document: ReturnType<typeof parse>;
        try {
          document = parse(params.query);
        } catch (error) {
          const clientError = asClientError(error);
          if (clientError) return refused([clientError]);
          throw error;
        }
        const errors = validate(envelopedSchema, document);
        if (errors.length) return refused(errors.map((e: GraphQLError) => asClientError(e) ?? e));
        // A subscription runs outside envelop and keeps its arguments for as long as it lasts:
        // only queries and mutations take envelop's execute along.
        const subscription = getOperationAST(document, params.operationName)?.operation === 'subscription';
        return {
          schema: envelopedSchema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue,
          rootValue: subscription ? undefined : { execute },
        };
      },
    },
    wss,
  );
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
