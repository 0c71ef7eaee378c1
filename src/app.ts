import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import { WorkspaceAuth } from './auth/workspace-auth.js';
import { ApiKeyCache, AssemblyCaches, SessionRowsCache } from './caches/index.js';
import type { AppConfig } from './config.js';
import { contextForEvent, requestContexts, type AppRuntime, type RequestContext } from './graphql/context.js';
import { createDatabase, type Database, databaseOptionsOf } from './db/database.js';
import { DomainError, domainErrorOf, toGraphQLError } from './graphql/errors.js';
import { Prisma } from './generated/prisma/client.js';
import { createLogger } from './logger.js';
import { createYoga, GraphQLError, getOperationAST, isAsyncIterable, useCSRFPrevention, WebSocketServer } from './packages/index.js';
import { createEventBus, type EventBus } from './pubsub/event-bus.js';
import { asClientError, useRequestParseErrors } from './graphql/client-errors.js';
import { DEFAULT_STRING_CHARS, textCaps } from './domain/parts.js';
import { asServiceUnavailable, isOutage } from './db/faults.js';
import { rateIdentity, rateLimitedBody, useHealthEndpoints, useJsonPostsOnly, useNoIntrospection, useRateLimit } from './http/guards.js';
import { createHttpFastPath, type FastPathOptions, type FastPathStats } from './http/fast-path.js';
import { useQueryLimits } from './graphql/query-limits.js';
import { type QueryJitStats, useQueryJit } from './graphql/query-jit.js';
import { configureSchemaChecks } from './schema/builder.js';
import { createRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { SubscriptionTracker } from './live/subscription-tracker.js';
import { type SocketExtra, useWebSocketServer } from './live/ws-server.js';
import { stringInterner } from './caches/interner.js';
import { schema } from './schema/index.js';
import { AssemblyService, DEFAULT_WINDOW_PAGING } from './services/assembly.js';
import { EventMemo } from './caches/event-memo.js';
import type { StreamMask } from './live/pump-stream.js';
import { type SharingStats, useSubscriptionSharing } from './live/sharing.js';
import { webSocketSink } from './live/ws-sink.js';
import { SessionService } from './services/sessions.js';
import { TurnService } from './services/turns.js';
import { TransformService } from './services/transforms.js';

/** WebSocket close code 1001 (RFC 6455 "going away"): the server is shutting down. */
const CLOSE_GOING_AWAY = 1001;

export interface App {
  yoga: YogaServerInstance<Record<string, unknown>, RequestContext>;
  server: Server;
  runtime: AppRuntime;
  /** How many subscription events were executed, and how many shared another subscriber's execution. */
  sharing: SharingStats;
  /** How many executions ran as compiled queries, and how many on graphql-js. */
  jit: QueryJitStats;
  /** How many HTTP requests the fast path answered, and how many it read and handed to Yoga. */
  fastPath: FastPathStats;
  /** Starts listening; resolves with the URL of the GraphQL endpoint. Then starts `warm()`. */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Loads what the server can do without at its start and loads once it listens (the query
   * compiler, see `useQueryJit`); resolves when done. Idempotent.
   */
  warm(): Promise<void>;
  /**
   * Graceful stop: stops accepting, completes every subscription (SSE `complete`, WebSocket 1001),
   * lets in-flight requests finish for up to `shutdownGraceMs`, then closes pub/sub and the
   * database. Idempotent.
   */
  close(): Promise<void>;
}

export interface BuildAppOptions {
  /** An already open database (tests); otherwise one is opened from the config. */
  database?: Database;
}

/**
 * Builds the whole server: database (migrated), pub/sub, GraphQL over HTTP, SSE and WebSocket on
 * one `http.Server`, and the health endpoints. Touches no process globals: `main.ts` owns the
 * environment, signals and the port.
 */
export async function buildApp(config: AppConfig, options: BuildAppOptions = {}): Promise<App> {
  configureSchemaChecks(config);
  const logger = createLogger(config.logLevel);
  const db = options.database ?? (await createDatabase(databaseOptionsOf(config)));
  let bus: EventBus | undefined;
  let limiter: RateLimiter | undefined;
  try {
    const report = await db.migrate();
    if (report.applied.length) logger.info('applied migrations', { migrations: report.applied });
    bus = createEventBus({ redisUrl: config.redisUrl, prefix: config.redisPrefix, logger });
    const auth = new WorkspaceAuth(db.sql, new ApiKeyCache(config.caches.apiKeyTtlMs, config.caches.apiKeyMax), {
      required: config.authRequired,
    });
    const revoked = await auth.init(config.apiKeys);
    for (const key of revoked) logger.warn('API_KEYS holds a revoked key; it stays refused', { workspace: key.workspace });
    const caches = new AssemblyCaches(config.caches);
    const caps = textCaps(config.maxStringChars ?? DEFAULT_STRING_CHARS[db.kind]);
    const sessions = new SessionService(db.prisma, db.sql, bus, caches, caps);
    const runtime: AppRuntime = {
      config,
      caps,
      logger,
      db,
      bus,
      auth,
      sessions,
      transforms: new TransformService(sessions),
      caches,
      sessionRows: new SessionRowsCache(db.sql.writes, config.caches.sessionRowsMax),
      assembly: new AssemblyService(db.prisma, db.sql, DEFAULT_WINDOW_PAGING, caches),
      turns: new TurnService(db.sql, bus, logger, {
        turnTimeoutMs: config.turnTimeoutMs,
        sweepIntervalMs: config.turnSweepIntervalMs,
      }),
      eventEntities: new EventMemo(),
    };
    limiter = createRateLimiter({ ...config.rateLimit, redisUrl: config.redisUrl, prefix: config.redisPrefix, logger });
    runtime.turns.startSweeper();
    return serve(runtime, limiter);
  } catch (error) {
    await limiter?.close();
    await bus?.close();
    await db.close();
    throw error;
  }
}

function serve(runtime: AppRuntime, limiter: RateLimiter): App {
  const { config, caps, logger, db, bus, auth } = runtime;
  const createContext = requestContexts(runtime);
  const endpoint = '/graphql';
  const subscriptions = new SubscriptionTracker();
  let stopping = false;

  const sharing = useSubscriptionSharing<RequestContext>({
    scopeOf: (ctx) => ctx.workspaceId,
    contextForEvent,
    streamOnlyArguments: { sessionEvents: ['afterSequence'], turnEvents: ['afterSequence'] },
    maxShapes: config.caches.subscriptionShapesMax,
    // Events run compiled once their document has run often enough (see useQueryJit).
    compiled: (args) => jit.eventExecutor(args),
  });
  /** What a client sees of an error (Yoga's masking, and the stream mask of WebSocket subscriptions). */
  const maskError = (error: unknown): GraphQLError => {
    const located = error instanceof GraphQLError ? error : undefined;
    const original = located ? located.originalError : error;
    const refusal = domainErrorOf(error);
    if (refusal && refusal.code !== 'SERVICE_UNAVAILABLE') {
      const refused = toGraphQLError(refusal, located);
      return asClientError(refused) ?? refused;
    }
    const clientError = refusal ? null : asClientError(error);
    if (clientError) return clientError;
    // A row read after the write that made it, deleted in between by another request.
    if (original instanceof Prisma.PrismaClientKnownRequestError && original.code === 'P2025') {
      return new GraphQLError('The object was not found; it may just have been deleted.', {
        path: located?.path,
        extensions: { code: 'NOT_FOUND' },
      });
    }
    const errorId = randomUUID();
    const outage = refusal ?? asServiceUnavailable(original ?? error);
    if (outage) {
      // Retryable for the client; the cause (kept off the response) goes to the log under errorId.
      logger.warn('dependency unavailable', { errorId, error: (outage as { cause?: unknown }).cause ?? original ?? error });
      return toGraphQLError(new DomainError(outage.code, outage.message, { ...outage.details, errorId }), located);
    }
    logger.error('unexpected error', { errorId, error: original ?? error });
    return new GraphQLError(`Unexpected error (id ${errorId}); it has been logged.`, {
      extensions: { code: 'INTERNAL_SERVER_ERROR', errorId },
    });
  };
  /**
   * Masking for WebSocket subscriptions, which `subscribeToSocket` runs outside envelop (and so
   * outside its masking plugin): a shared result with errors is masked once (the plugin masked it,
   * and logged its unexpected errors, once per subscriber), and an AbortError passes as it is (as
   * Yoga lets it).
   */
  const maskedResults = new WeakMap<ExecutionResult, ExecutionResult>();
  const streamMask: StreamMask = {
    result(result) {
      if (!result.errors?.length) return result;
      let masked = maskedResults.get(result);
      if (!masked) maskedResults.set(result, (masked = { ...result, errors: result.errors.map(maskError) }));
      return masked;
    },
    error: (error) => (error instanceof Error && error.name === 'AbortError' ? error : maskError(error)),
  };
  const jit = useQueryJit(config.queryJit);
  const yoga = createYoga<Record<string, unknown>, RequestContext>({
    schema,
    graphqlEndpoint: endpoint,
    logging: false,
    graphiql: config.graphiql ? { title: 'session-graph', subscriptionsProtocol: 'WS' } : false,
    // The offline GraphiQL bundle (about 50 MB in memory) is loaded on the first browser GET, not at start.
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    landingPage: false,
    // No file uploads: a multipart File mapped onto a variable would reach a resolver as an object.
    multipart: false,
    // useRequestParseErrors refuses a declared length over the cap and cuts off a body sent without one.
    maxRequestBodySize: false,
    cors: (request) => corsFor(request.headers.get('origin'), config.corsOrigins),
    plugins: [
      useHealthEndpoints({ db, bus, timeoutMs: config.readyTimeoutMs, stopping: () => stopping }),
      useRateLimit(limiter, endpoint),
      useJsonPostsOnly(endpoint),
      useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf', 'graphql-require-preflight'] }),
      ...(config.graphiql ? [] : [useNoIntrospection()]),
      useRequestParseErrors(caps),
      useQueryLimits(),
      sharing,
      subscriptions.plugin(),
      jit,
    ],
    maskedErrors: { maskError },
    context: ({
      request,
      connectionParams,
      extra,
    }: {
      request?: Request;
      connectionParams?: Record<string, unknown>;
      extra?: SocketExtra;
    }) =>
      createContext({
        authorization: authorizationFrom(request, connectionParams, extra?.authorization),
      }),
  });

  const fastPath = createHttpFastPath({
    yoga: yoga as unknown as FastPathOptions['yoga'],
    endpoint,
    limiter,
    maxBodyBytes: caps.requestBytes,
    maskError,
  });
  // connectionsCheckingInterval is how often Node enforces headersTimeout and requestTimeout.
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, config.timeouts.headersMs) }, (req, res) => {
    if (stopping) res.setHeader('connection', 'close');
    // A keep-alive connection whose request was in flight at shutdown must not hold the drain open.
    res.on('finish', () => {
      if (stopping) setImmediate(() => server.closeIdleConnections());
    });
    if (!fastPath.handle(req, res)) void yoga(req, res);
  });
  server.headersTimeout = config.timeouts.headersMs;
  server.requestTimeout = config.timeouts.requestMs;
  server.keepAliveTimeout = config.timeouts.keepAliveMs;
  // A client that stops reading a large response stalls its socket; SSE streams ping every 12 s
  // and WebSockets leave this timer once upgraded, so only dead or stalled sockets hit it.
  server.timeout = config.timeouts.idleMs;

  // A frame is bounded as an HTTP body is (ws's own default is 100 MiB, whose JSON.parse alone
  // would hold the thread for a second): a larger one closes the socket with 1009.
  // graphql-ws keeps each operation's message (and so its query) for as long as the operation
  // runs, and clients of one application subscribe with the same few documents: one copy of each
  // text (SUBSCRIPTION_SHAPES_MAX of them). Applied in onSubscribe, not as a `jsonMessageReviver`:
  // a reviver runs for every key of every message, which made the parse of a frame at the size cap
  // three times slower (4 MiB: 45 to 157 ms).
  const shareQueryText = stringInterner(config.caches.subscriptionShapesMax);
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint, maxPayload: caps.requestBytes });
  const wsServer = useWebSocketServer(
    {
      hideInternalErrors: config.production,
      execute: (args) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never,
      // Outside envelop (see subscribeToSocket): masked by streamMask, tracked for shutdown here.
      subscribe: async (args, ctx, id) => {
        const result = await sharing.subscribeToSocket(args, webSocketSink(ctx.extra.socket, id), streamMask);
        return isAsyncIterable(result) ? subscriptions.track(result) : result;
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
        // graphql-ws keeps this payload for as long as the operation runs: one copy of each text.
        if (typeof params.query === 'string') (params as { query: string }).query = shareQueryText(params.query);
        const decision = await limiter.take(
          rateIdentity(authorizationFrom(undefined, ctx.connectionParams, ctx.extra.authorization), ctx.extra.remoteAddress),
        );
        if (!decision.allowed) {
          const { message, extensions } = rateLimitedBody(decision.retryAfterSeconds);
          const { code, ...details } = extensions;
          return [toGraphQLError(new DomainError(code, message, details))];
        }
        const {
          schema: envelopedSchema,
          execute,
          contextFactory,
          parse,
          validate,
          // Only what the context function reads, and the operation: the context built on this
          // object lives as long as the subscription, so the rest of graphql-ws's connection state
          // (the socket, its operations table) is left out of it.
        } = yoga.getEnveloped({ connectionParams: ctx.connectionParams, extra: ctx.extra, params });
        let contextValue: RequestContext;
        try {
          contextValue = (await contextFactory()) as unknown as RequestContext;
        } catch (error) {
          if (error instanceof GraphQLError) return [error];
          if (error instanceof DomainError) return [toGraphQLError(error)];
          const unavailable = asServiceUnavailable(error);
          if (unavailable) return [toGraphQLError(unavailable)];
          throw error;
        }
        let document: ReturnType<typeof parse>;
        try {
          document = parse(params.query);
        } catch (error) {
          const clientError = asClientError(error);
          if (clientError) return [clientError];
          throw error;
        }
        const errors = validate(envelopedSchema, document);
        if (errors.length) return errors.map((e: GraphQLError) => asClientError(e) ?? e);
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

  let closing: Promise<void> | null = null;
  return {
    yoga,
    server,
    runtime,
    sharing: sharing.stats,
    jit: jit.stats,
    fastPath: fastPath.stats,
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
          resolve(`http://${shownHost}:${address.port}${yoga.graphqlEndpoint}`);
          void jit.load();
        });
      });
    },
    warm: () => jit.load(),
    close() {
      closing ??= (async () => {
        stopping = true;
        // Stop accepting; requests already running (on any connection) go on until the grace ends.
        const drained = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
        server.closeIdleConnections();
        // SSE streams end with `complete`; graphql-ws operations with a complete message, then 1001.
        subscriptions.completeAll();
        await new Promise((resolve) => setImmediate(resolve));
        for (const client of wss.clients) client.close(CLOSE_GOING_AWAY, 'Server shutting down');
        await wsServer.dispose();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        server.closeIdleConnections();
        const force = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
        await drained;
        clearTimeout(force);
        await runtime.turns.stop();
        await limiter.close();
        await bus.close();
        await db.close();
      })();
      return closing;
    },
  };
}

/**
 * CORS headers only for configured origins: a listed origin is echoed with credentials; `*`
 * allows any origin (echoed, `Vary: Origin`) without credentials; anything else gets no CORS
 * headers at all, so a browser refuses to show it the answer.
 */
function corsFor(origin: string | null, allowed: string[]) {
  if (!origin) return false as const;
  const common = { methods: ['GET', 'POST', 'OPTIONS'], exposedHeaders: ['retry-after'], maxAge: 600 };
  if (allowed.includes(origin)) return { ...common, origin: [origin], credentials: true };
  if (allowed.includes('*')) return { ...common, origin: '*', credentials: false };
  return false as const;
}

/** The key from the Fetch request, graphql-ws `connectionParams`, or the WebSocket upgrade request's header. */
function authorizationFrom(
  request: Request | undefined,
  connectionParams: Record<string, unknown> | undefined,
  upgradeHeader?: string | null,
): string | null {
  const header = request?.headers.get('authorization');
  if (header) return header;
  const fromParams = connectionParams?.Authorization ?? connectionParams?.authorization;
  if (typeof fromParams === 'string') return fromParams;
  return upgradeHeader ?? null;
}
