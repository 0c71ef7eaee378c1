import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Plugin, YogaServerInstance } from 'graphql-yoga';
import type { Tracing } from './graphql/tracing.js';
import { WorkspaceAuth } from './auth/workspace-auth.js';
import { ShareLinks } from './auth/share-links.js';
import { ApiKeyCache, AssemblyCaches, KeptReads, SessionRowsCache } from './caches/index.js';
import type { AppConfig } from './config.js';
import { requestContextForEvent, requestContexts, sharingScopeOf, type AppRuntime, type RequestContext } from './graphql/context.js';
import { createDatabase, type Database, databaseOptionsOf } from './db/database.js';
import { checkTokenizerShape } from './domain/tokens.js';
import { createLogger } from './logger.js';
import { createYoga } from 'graphql-yoga';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { createFetch } from '@whatwg-node/fetch';
import { createEventBus } from './pubsub/event-bus.js';
import type { EventBus } from './pubsub/bus.js';
import { useRequestParseErrors } from './graphql/client-errors.js';
import { createErrorMask, createStreamMask } from './graphql/mask.js';
import { DEFAULT_STRING_CHARS, LIMITS, textCaps } from './domain/limits.js';
import {
  authorizationFrom,
  useHealthEndpoints,
  useJsonPostsOnly,
  useNoIntrospection,
  useOutageRetryAfter,
  useRateLimit,
} from './http/guards.js';
import { createHttpFastPath, type FastPathOptions, type FastPathStats } from './http/fast-path.js';
import { assertFastPathHonours, fastPathCovers } from './http/fast-path-contract.js';
import { corsFor, createHttpServer } from './http/server.js';
import { useGraphQLWebSocket } from './http/websocket.js';
import { useExplorer } from './http/explorer.js';
import { ServerMetrics } from './http/metrics.js';
import { loadTrustedDocuments, TrustedDocuments } from './http/trusted-documents.js';
import { useQueryLimits } from './graphql/query-limits.js';
import { useKeyScopes } from './graphql/key-scopes.js';
import { useReadReplicas } from './graphql/consistency.js';
import { type QueryJitStats, useQueryJit } from './graphql/query-jit.js';
import { createRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { SubscriptionTracker } from './live/subscription-tracker.js';
import type { SocketExtra } from './live/ws-connection.js';
import { schema, withDevelopmentChecks } from './schema/index.js';
import { AssemblyService } from './services/assembly.js';
import { DEFAULT_WINDOW_PAGING } from './domain/assembly/window.js';
import { EventMemo } from './caches/event-memo.js';
import { type SharingStats, useSubscriptionSharing } from './live/sharing.js';
import { SessionService } from './services/sessions.js';
import { TurnService } from './services/turns.js';
import { TransformService } from './services/transforms.js';
import { EventRetention } from './services/event-retention.js';
import { AttachmentDownloads } from './services/attachment-downloads.js';
import { useAttachmentDownloads } from './http/attachment-downloads.js';
import { EXPORT_PAGING, ExportService } from './services/exports.js';
import { ImportService } from './services/imports.js';
import { useExportImport } from './http/export-import.js';
import { SharedReads } from './services/shared-reads.js';
import { TokenPrecount } from './caches/token-precount.js';
import { eventSweepInterval } from './config.js';

export interface App {
  yoga: YogaServerInstance<Record<string, unknown>, RequestContext>;
  server: Server;
  runtime: AppRuntime;
  /** How many subscription events were executed, and how many shared another subscriber's execution. */
  sharing: SharingStats;
  /** How many executions ran as compiled queries, and how many on graphql-js (all zero with `queryJit` off). */
  jit: QueryJitStats;
  /** How many HTTP requests the fast path answered, and how many it read and handed to Yoga (all zero with `httpFastPath` off). */
  fastPath: FastPathStats;
  /** What `/metrics` serves. */
  metrics: ServerMetrics;
  /**
   * Starts listening; resolves with the URL of the GraphQL endpoint. Then starts `warm()`. Already
   * listening: resolves with the URL it listens on.
   */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Loads what the server can do without at its start and loads once it listens (the query
   * compiler, see `useQueryJit`); resolves when done. Idempotent.
   */
  warm(): Promise<void>;
  /**
   * Graceful stop: stops accepting, completes every subscription (SSE `complete`, WebSocket 1001),
   * reads and answers every request already on an open connection (`Connection: close`) for up
   * to `shutdownGraceMs`, answering 503 SERVICE_UNAVAILABLE to those still running then, and
   * closes pub/sub and the database. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * The places where the server replaces the path every GraphQL engineer knows with a faster one of
 * its own (docs/performance.md says what each buys). Each is on by default and can be turned off,
 * leaving the obvious path, which the suite keeps correct (`TEST_DEVIATIONS=off`).
 */
export interface Deviations {
  /**
   * A plain JSON POST of a query or mutation goes straight to envelop (`src/http/fast-path.ts`).
   * Off: every request takes Yoga's request pipeline.
   */
  httpFastPath: boolean;
  /**
   * graphql-transport-ws served by our own server (`src/live/ws-server.ts`), whose subscriptions
   * write their results to the socket themselves (`subscribeToSocket`). Off: graphql-ws's
   * `useServer`, with every operation run through envelop (`execute`, `subscribe`).
   */
  ownWebSocketServer: boolean;
  /** Repeated documents run compiled by graphql-jit (`src/graphql/query-jit.ts`). Off: graphql-js runs everything; graphql-jit is never loaded. */
  queryJit: boolean;
  /**
   * On PGlite, named statements prepared once and run as one Bind/Execute/Sync message
   * (`src/db/pglite-statements.ts`). Off: PGlite's `query` for every statement. Applies to the
   * database `buildApp` opens; a `database` passed in keeps what `createDatabase` was told.
   */
  pgliteStatements: boolean;
}

/** Every deviation on: the server as it runs in production. */
export const ALL_DEVIATIONS: Deviations = { httpFastPath: true, ownWebSocketServer: true, queryJit: true, pgliteStatements: true };

/** Every deviation off: Yoga's request pipeline, graphql-ws's `useServer`, graphql-js, PGlite's `query`. */
export const NO_DEVIATIONS: Deviations = { httpFastPath: false, ownWebSocketServer: false, queryJit: false, pgliteStatements: false };

export interface BuildAppOptions {
  /** An already open database (tests); otherwise one is opened from the config. */
  database?: Database;
  /** Turns deviations from the obvious implementation off (`Deviations`); those not named stay on. */
  deviations?: Partial<Deviations>;
  /**
   * Plugins run after the app's own (a deployment's tracing or metrics, a test's rule). Like the
   * app's own, each must keep the HTTP fast path's contract (`assertFastPathHonours`), or the
   * build fails.
   */
  plugins?: Plugin[];
  /** OpenTelemetry traces (`startTracing`): a span per operation, its statements under it. Flushed and stopped by `close`. */
  tracing?: Tracing;
}

/**
 * Builds the whole server: database (migrated), pub/sub, GraphQL over HTTP, SSE and WebSocket on
 * one `http.Server`, and the health endpoints. Touches no process globals: `start.ts` (what
 * `main.ts` runs) owns the environment, signals and the port.
 */
export async function buildApp(config: AppConfig, options: BuildAppOptions = {}): Promise<App> {
  checkTokenizerShape();
  const logger = createLogger(config.logLevel);
  const deviations: Deviations = { ...ALL_DEVIATIONS, ...options.deviations };
  const db = options.database ?? (await createDatabase(databaseOptionsOf(config, deviations.pgliteStatements)));
  let bus: EventBus | undefined;
  let limiter: RateLimiter | undefined;
  let precount: TokenPrecount | undefined;
  try {
    const report = await db.migrate();
    if (report.applied.length) logger.info('applied migrations', { migrations: report.applied });
    if (db.replicas) {
      db.replicas.onChange = (replica, problem) =>
        problem === null
          ? logger.info('read replica serves reads again', { replica: replica.index })
          : logger.warn('read replica skipped: its reads go to the primary', { replica: replica.index, problem });
    }
    const metrics = new ServerMetrics(config.metricsToken);
    bus = createEventBus({
      redisUrl: config.redisUrl,
      redisClusterNodes: config.redisClusterNodes,
      prefix: config.redisPrefix,
      logger,
      observer: metrics.bus,
    });
    const auth = new WorkspaceAuth(db.sql, new ApiKeyCache(config.caches.apiKeyTtlMs, config.caches.apiKeyMax), {
      required: config.authRequired,
    });
    const revoked = await auth.init(config.apiKeys);
    for (const key of revoked) logger.warn('API_KEYS holds a revoked key; it stays refused', { workspace: key.workspace });
    const caches = new AssemblyCaches(config.caches);
    const caps = textCaps(config.maxStringChars ?? DEFAULT_STRING_CHARS[db.kind]);
    precount = new TokenPrecount(config.caches.precountMaxChars);
    const sessions = new SessionService(db.prisma, db.sql, bus, caches, caps, precount);
    const runtime: AppRuntime = {
      config,
      caps,
      precount,
      logger,
      db,
      bus,
      auth,
      shareLinks: new ShareLinks(db.sql, auth, config.caches.apiKeyTtlMs),
      sessions,
      transforms: new TransformService(sessions, precount),
      caches,
      sessionRows: new SessionRowsCache(db.sql.writes, config.caches.sessionRowsMax),
      assembly: new AssemblyService(db.prisma, db.sql, DEFAULT_WINDOW_PAGING, caches, precount, 2 * caps.fileBytes),
      turns: new TurnService(db.sql, bus, logger, {
        turnTimeoutMs: config.turnTimeoutMs,
        sweepIntervalMs: config.turnSweepIntervalMs,
      }),
      eventEntities: new EventMemo(),
      downloads: new AttachmentDownloads(db.sql.reads),
      exports: new ExportService(db.sql.reads, db.sql.oneConnection ? EXPORT_PAGING.oneConnection : EXPORT_PAGING.pooled),
      imports: new ImportService(db.sql, caps, precount),
      sharedReads: new SharedReads(new KeptReads(db.sql.reads, config.caches.keptReadsMaxChars)),
      retention:
        config.eventRetentionMs === null
          ? null
          : new EventRetention(db.sql, logger, {
              retentionMs: config.eventRetentionMs,
              sweepIntervalMs: eventSweepInterval(config.eventRetentionMs),
            }),
    };
    limiter = createRateLimiter({
      ...config.rateLimit,
      redisUrl: config.redisUrl,
      redisClusterNodes: config.redisClusterNodes,
      prefix: config.redisPrefix,
      logger,
    });
    if (options.tracing) {
      const tracing = options.tracing;
      db.queries.statementSpans = (sql) => tracing.statementSpan(sql);
    }
    // After the query compiler's plugin: the operation span wraps whichever execute it chose.
    const app = serve(runtime, limiter, metrics, deviations, [
      ...(options.tracing ? [options.tracing.plugin] : []),
      ...(options.plugins ?? []),
    ]);
    if (options.tracing) {
      const tracing = options.tracing;
      const close = app.close;
      app.close = () => close().finally(() => tracing.shutdown());
    }
    runtime.turns.startSweeper();
    runtime.retention?.start();
    return app;
  } catch (error) {
    await precount?.close();
    await limiter?.close();
    await bus?.close();
    await db.close();
    throw error;
  }
}

function serve(runtime: AppRuntime, limiter: RateLimiter, metrics: ServerMetrics, deviations: Deviations, extraPlugins: Plugin[]): App {
  const { config, caps, logger, db, bus } = runtime;
  const createRequestContext = requestContexts(runtime);
  const endpoint = '/graphql';
  const subscriptions = new SubscriptionTracker();
  let stopping = false;
  const maskError = createErrorMask(logger);
  // Documents sent as text stay allowed, with trusted documents on, to full-scope keys where GraphiQL is on.
  const trusted = config.trustedDocuments
    ? new TrustedDocuments(
        loadTrustedDocuments(config.trustedDocuments),
        async (authorization) =>
          config.graphiql &&
          (await runtime.auth.grantFor(authorization).then(
            (g) => g.scope === 'FULL',
            () => false,
          )),
      )
    : null;

  const jit = deviations.queryJit ? useQueryJit(config.queryJit) : null;
  const sharing = useSubscriptionSharing<RequestContext>({
    scopeOf: sharingScopeOf,
    requestContextForEvent,
    streamOnlyArguments: { sessionEvents: ['afterSequence'], turnEvents: ['afterSequence'] },
    maxShapes: config.caches.subscriptionShapesMax,
    // Events run compiled once their document has run often enough (see useQueryJit).
    compiled: jit ? (args) => jit.eventExecutor(args) : undefined,
  });
  const plugins = [
    useHealthEndpoints({ db, bus, timeoutMs: config.readyTimeoutMs, stopping: () => stopping }),
    // The explorer is a playground too: served exactly where GraphiQL is.
    ...(config.graphiql ? [useExplorer()] : []),
    ...metrics.plugins(),
    useRateLimit(limiter, endpoint),
    useJsonPostsOnly(endpoint),
    useAttachmentDownloads({ auth: runtime.auth, downloads: runtime.downloads, shareLinks: runtime.shareLinks }),
    useExportImport({ auth: runtime.auth, exports: runtime.exports, imports: runtime.imports }),
    useOutageRetryAfter(endpoint),
    // The fast path takes only a request naming a listed document without text, and runs that
    // document, found with the plugin's own lookup (`trustedDocument` below).
    ...(trusted ? [fastPathCovers(trusted.plugin(), ['onParams'])] : []),
    // CSRF prevention refuses only bodies of a type a browser sends without a preflight: the fast
    // path takes only JSON bodies (`isJsonBodyType`), which it lets through.
    fastPathCovers(
      useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf', 'graphql-require-preflight', 'apollo-require-preflight'] }),
      ['onRequestParse'],
    ),
    ...(config.graphiql ? [] : [useNoIntrospection()]),
    // The fast path takes only a declared length within the same cap (`withinBodyCap`), and hands
    // any body that is not one JSON object of GraphQL's keys to Yoga, unread by envelop.
    fastPathCovers(useRequestParseErrors(caps), ['onRequestParse']),
    useQueryLimits(),
    useKeyScopes(),
    sharing,
    subscriptions.plugin(),
    ...(jit ? [jit] : []),
    // After the compiler's plugin: routes whichever execute it chose (db/replicas.ts).
    ...(db.replicas ? [useReadReplicas(db.replicas)] : []),
    ...extraPlugins,
  ];
  // Every request the fast path answers must see every plugin as Yoga's path would; checked with
  // the fast path off too, so that a plugin set runs on either path.
  assertFastPathHonours(plugins);
  const yoga = createYoga<Record<string, unknown>, RequestContext>({
    schema: config.production ? schema : withDevelopmentChecks(schema),
    graphqlEndpoint: endpoint,
    logging: false,
    graphiql: config.graphiql ? { title: 'session-graph', subscriptionsProtocol: 'WS' } : false,
    // The offline GraphiQL bundle is loaded on the first browser GET, not at start.
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    landingPage: false,
    // File uploads (the GraphQL multipart request spec) reach the `File` scalar only: JSON refuses a
    // file. Busboy's limits refuse a file as it streams past `fileBytes` (413), and the body cap for
    // multipart (`multipartBytes`) holds the rest; CSRF prevention asks a multipart POST for a header.
    multipart: true,
    fetchAPI: createFetch({
      formDataLimits: {
        fileSize: caps.fileBytes,
        files: LIMITS.filesPerRequest,
        fieldSize: caps.requestBytes,
        fields: 8,
        parts: LIMITS.filesPerRequest + 8,
      },
    }),
    // A trusted document's name (TRUSTED_DOCUMENTS); without them, `documentId` is refused as any unknown key.
    extraParamNames: trusted ? ['documentId'] : [],
    // useRequestParseErrors refuses a declared length over the cap and cuts off a body sent without one.
    maxRequestBodySize: false,
    cors: (request) => corsFor(request.headers.get('origin'), config.corsOrigins),
    plugins,
    maskedErrors: { maskError },
    // Over WebSocket there is no Fetch request: the key comes from `connectionParams`, else from the
    // upgrade request's header (our server keeps it in `extra`; graphql-ws's `useServer` passes the
    // upgrade request as `req`).
    context: ({
      request,
      connectionParams,
      extra,
      req,
    }: {
      request?: Request;
      connectionParams?: Record<string, unknown>;
      extra?: Partial<SocketExtra>;
      req?: IncomingMessage;
    }) =>
      createRequestContext({
        authorization: authorizationFrom(request, connectionParams, extra?.authorization ?? req?.headers.authorization),
      }),
  });

  const fastPath = deviations.httpFastPath
    ? createHttpFastPath({
        yoga: yoga as unknown as FastPathOptions['yoga'],
        endpoint,
        limiter,
        caps,
        maskError,
        countResult: (result) => metrics.countResult(result),
        trustedDocument: trusted ? (params) => trusted.documentFor(params) : undefined,
      })
    : null;
  const { server, connections } = createHttpServer(
    config.timeouts,
    fastPath
      ? (req, res) => {
          if (!fastPath.handle(req, res)) void yoga(req, res);
        }
      : (req, res) => void yoga(req, res),
  );
  const webSocket = useGraphQLWebSocket({
    transport: deviations.ownWebSocketServer ? 'own' : 'graphql-ws',
    server,
    yoga,
    maxPayload: caps.requestBytes,
    maxQueryTexts: config.caches.subscriptionShapesMax,
    limiter,
    auth: runtime.auth,
    logger,
    sharing,
    subscriptions,
    streamMask: createStreamMask(maskError),
    hideInternalErrors: config.production,
    metrics,
    trusted,
  });
  metrics.attach({
    liveSubscriptions: () => subscriptions.size,
    webSocketConnections: () => webSocket.connections(),
    pingDatabase: () => db.ping(),
    pingPubSub: () => bus.ping(),
    replicas: db.replicas,
    timeoutMs: config.readyTimeoutMs,
  });

  let listeningAt: string | undefined;
  let closing: Promise<void> | null = null;
  return {
    yoga,
    server,
    runtime,
    sharing: sharing.stats,
    jit: jit?.stats ?? { compiled: 0, interpreted: 0, compilations: 0 },
    fastPath: fastPath?.stats ?? { answered: 0, handedOver: 0 },
    metrics,
    listen(port = config.port, host = config.host) {
      if (listeningAt) return Promise.resolve(listeningAt);
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
          listeningAt = `http://${shownHost}:${address.port}${yoga.graphqlEndpoint}`;
          resolve(listeningAt);
          void jit?.load();
        });
      });
    },
    warm: () => jit?.load() ?? Promise.resolve(),
    close() {
      closing ??= (async () => {
        stopping = true;
        // Stop accepting; every request on an open connection is read and answered (503 once the
        // grace ends), each response closing its connection.
        const drained = connections.drain(config.shutdownGraceMs);
        // SSE streams end with `complete`; graphql-ws operations with a complete message, then 1001.
        subscriptions.completeAll();
        await new Promise((resolve) => setImmediate(resolve));
        await webSocket.close();
        await drained;
        await runtime.turns.stop();
        await runtime.retention?.stop();
        await runtime.precount.close();
        await limiter.close();
        await bus.close();
        await db.close();
        metrics.detach();
      })();
      return closing;
    },
  };
}
