import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer } from 'ws';
import { WorkspaceAuth } from './auth.js';
import { ApiKeyCache, AssemblyCaches } from './caches/index.js';
import type { AppConfig } from './config.js';
import { contextForEvent, createRequestContext, type AppRuntime, type RequestContext } from './request.js';
import { createDatabase, type Database } from './db/database.js';
import { DomainError, domainErrorOf, toGraphQLError } from './errors.js';
import { Prisma } from './generated/prisma/client.js';
import { createLogger } from './logger.js';
import { createEventBus, type EventBus } from './pubsub.js';
import { asClientError, useRequestParseErrors } from './client-errors.js';
import { useQueryLimits } from './query-limits.js';
import { configureSchemaChecks } from './schema/builder.js';
import { schema } from './schema/index.js';
import { AssemblyService, DEFAULT_WINDOW_PAGING } from './services/assembly.js';
import { EventMemo, useSubscriptionSharing, type SharingStats } from './subscription-sharing.js';
import { SessionService } from './services/sessions.js';
import { TurnService } from './services/turns.js';

/** WebSocket close code 1001 (RFC 6455 "going away"): the server is shutting down. */
const CLOSE_GOING_AWAY = 1001;

export interface App {
  yoga: YogaServerInstance<Record<string, unknown>, RequestContext>;
  server: Server;
  runtime: AppRuntime;
  /** How many subscription events were executed, and how many shared another subscriber's execution. */
  sharing: SharingStats;
  /** Starts listening; resolves with the URL of the GraphQL endpoint. */
  listen(port?: number, host?: string): Promise<string>;
  /** Closes WebSocket clients, drains HTTP, then closes pub/sub and the database. Idempotent. */
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
  const db =
    options.database ??
    (await createDatabase(
      config.databaseUrl ? { kind: 'postgres', url: config.databaseUrl } : { kind: 'pglite', dataDir: config.dataDir },
    ));
  let bus: EventBus | undefined;
  try {
    const report = await db.migrate();
    if (report.applied.length) logger.info('applied migrations', { migrations: report.applied });
    bus = createEventBus({ redisUrl: config.redisUrl, prefix: config.redisPrefix, logger });
    const auth = new WorkspaceAuth(db.prisma, new ApiKeyCache(config.caches.apiKeyTtlMs, config.caches.apiKeyMax));
    await auth.init(config.apiKeys);
    const caches = new AssemblyCaches(config.caches);
    const sessions = new SessionService(db.prisma, db.sql, bus, caches);
    const runtime: AppRuntime = {
      config,
      logger,
      db,
      bus,
      auth,
      sessions,
      caches,
      assembly: new AssemblyService(db.prisma, db.sql, DEFAULT_WINDOW_PAGING, caches),
      turns: new TurnService(db.sql, bus, logger, {
        turnTimeoutMs: config.turnTimeoutMs,
        sweepIntervalMs: config.turnSweepIntervalMs,
      }),
      eventEntities: new EventMemo(),
    };
    runtime.turns.startSweeper();
    return serve(runtime);
  } catch (error) {
    await bus?.close();
    await db.close();
    throw error;
  }
}

function serve(runtime: AppRuntime): App {
  const { config, logger, db, bus } = runtime;

  const sharing = useSubscriptionSharing<RequestContext>({
    scopeOf: (ctx) => ctx.workspaceId,
    contextForEvent,
    streamOnlyArguments: { sessionEvents: ['afterSequence'], turnEvents: ['afterSequence'] },
  });
  const yoga = createYoga<Record<string, unknown>, RequestContext>({
    schema,
    logging: false,
    graphiql: { title: 'session-graph', subscriptionsProtocol: 'WS' },
    renderGraphiQL,
    landingPage: false,
    // No file uploads: a multipart File mapped onto a variable would reach a resolver as an object.
    multipart: false,
    plugins: [useRequestParseErrors(), useQueryLimits(), sharing],
    maskedErrors: {
      maskError(error) {
        const refusal = domainErrorOf(error);
        if (refusal) {
          const refused = toGraphQLError(refusal, error instanceof GraphQLError ? error : undefined);
          return asClientError(refused) ?? refused;
        }
        const original = error instanceof GraphQLError ? error.originalError : error;
        const clientError = asClientError(error);
        if (clientError) return clientError;
        // A row read after the write that made it, deleted in between by another request.
        if (original instanceof Prisma.PrismaClientKnownRequestError && original.code === 'P2025') {
          return new GraphQLError('The object was not found; it may just have been deleted.', {
            path: error instanceof GraphQLError ? error.path : undefined,
            extensions: { code: 'NOT_FOUND' },
          });
        }
        const errorId = randomUUID();
        logger.error('unexpected error', { errorId, error: original ?? error });
        return new GraphQLError(`Unexpected error (id ${errorId}); it has been logged.`, {
          extensions: { code: 'INTERNAL_SERVER_ERROR', errorId },
        });
      },
    },
    context: ({ request, connectionParams }: { request?: Request; connectionParams?: Record<string, unknown> }) =>
      createRequestContext(runtime, {
        authorization: authorizationFrom(request, connectionParams),
      }),
  });

  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const checks = await Promise.allSettled([db.ping(), bus.ping()]);
      const [database, pubsub] = checks.map((c) => (c.status === 'fulfilled' ? 'ok' : `error: ${(c.reason as Error).message}`));
      const ready = checks.every((c) => c.status === 'fulfilled');
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ok' : 'unavailable', database, pubsub });
    }
    return yoga.handle(req, res);
  });

  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint });
  const wsServer = useServer<Record<string, unknown>, { request: IncomingMessage }>(
    {
      execute: (args) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never,
      subscribe: (args) => (args.rootValue as { subscribe: (a: ExecutionArgs) => unknown }).subscribe(args) as never,
      onSubscribe: async (ctx, _id, params) => {
        const { schema: envelopedSchema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
        });
        let contextValue: RequestContext;
        try {
          contextValue = (await contextFactory()) as unknown as RequestContext;
        } catch (error) {
          if (error instanceof GraphQLError) return [error];
          if (error instanceof DomainError) return [toGraphQLError(error)];
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
        return {
          schema: envelopedSchema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue,
          rootValue: { execute, subscribe },
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
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
          resolve(`http://${shownHost}:${address.port}${yoga.graphqlEndpoint}`);
        });
      });
    },
    close() {
      closing ??= (async () => {
        for (const client of wss.clients) client.close(CLOSE_GOING_AWAY, 'Server shutting down');
        await wsServer.dispose();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        if (server.listening) {
          const drained = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeIdleConnections();
          const force = setTimeout(() => server.closeAllConnections(), 5_000);
          await drained;
          clearTimeout(force);
        }
        await runtime.turns.stop();
        await bus.close();
        await db.close();
      })();
      return closing;
    },
  };
}

function authorizationFrom(request: Request | undefined, connectionParams: Record<string, unknown> | undefined): string | null {
  const header = request?.headers.get('authorization');
  if (header) return header;
  const fromParams = connectionParams?.Authorization ?? connectionParams?.authorization;
  if (typeof fromParams === 'string') return fromParams;
  return null;
}

function sendJson(res: import('node:http').ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

