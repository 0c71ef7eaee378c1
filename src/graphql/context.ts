import { initContextCache } from '@pothos/core';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import type { ShareLinks } from '../auth/share-links.js';
import type { ShareGrant } from '../caches/api-keys.js';
import type { AppConfig, KeyScope } from '../config.js';
import type { Database } from '../db/database.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Logger } from '../logger.js';
import type { EventBus } from '../pubsub/bus.js';
import type { TextCaps } from '../domain/limits.js';
import type { AssemblyCaches, SessionRowsCache } from '../caches/index.js';
import type { TokenPrecount } from '../caches/token-precount.js';
import type { ExportService } from '../services/exports.js';
import type { ImportService } from '../services/imports.js';
import type { AttachmentDownloads } from '../services/attachment-downloads.js';
import type { AssemblyService } from '../services/assembly.js';
import { RequestLoaders, type LoaderSources } from '../services/loaders.js';
import { ReadService, type EventEntityMemo } from '../services/reads.js';
import { MessageSearchService } from '../services/search.js';
import type { SessionService } from '../services/sessions.js';
import type { TransformService } from '../services/transforms.js';
import type { TurnService } from '../services/turns.js';
import type { EventRetention } from '../services/event-retention.js';
import type { SharedReads } from '../services/shared-reads.js';

/**
 * The long-lived parts of one app instance, shared by every request: configuration, logger,
 * database, pub/sub, auth and the services (src/services/) that orchestrate writes and assembly.
 * Resolvers never see it whole: `requestContexts` hands them the parts they use.
 */
export interface AppRuntime {
  config: AppConfig;
  /** The caps on strings, attachments, arguments and bodies for this backend (MAX_STRING_CHARS, `textCaps`). */
  caps: TextCaps;
  /** Long texts' token counts, made in a worker before they are needed (stopped by `close`). */
  precount: TokenPrecount;
  logger: Logger;
  db: Database;
  bus: EventBus;
  auth: WorkspaceAuth;
  /** Share links: create, revoke, and what a share token may download. */
  shareLinks: ShareLinks;
  sessions: SessionService;
  /** History transforms: hide, redact, strip tool outputs. */
  transforms: TransformService;
  assembly: AssemblyService;
  /** The caches assembly reads through; `forget` is called by every path that can break their rules. */
  caches: AssemblyCaches;
  turns: TurnService;
  /** Session rows while this process is the database's only writer (PGlite); see its rule. */
  sessionRows: SessionRowsCache;
  /** What events point at (message, session), read once per instance per event by every subscriber. */
  eventEntities: EventEntityMemo;
  /** The reads the event streams and subscription checks share (and keep until the next write, on PGlite). */
  sharedReads: SharedReads;
  /** The event log's sweeper and replay check (EVENT_RETENTION_MS); null: events are kept for ever. */
  retention: EventRetention | null;
  /** What `/attachments/<id>` serves. */
  downloads: AttachmentDownloads;
  /** `GET /export/sessions/<id>`. */
  exports: ExportService;
  /** `POST /import` and `importSessions`. */
  imports: ImportService;
}

/**
 * One request's (or one WebSocket operation's) GraphQL context: who is asking, its loaders, and
 * the services resolvers call. Its one database handle, `prisma`, is for Pothos's Prisma plugin
 * (selections); every other read and every write goes through loaders and services to the stores
 * (docs/architecture.md, "Reaching data").
 */
export interface RequestContext {
  workspaceId: string;
  /** What the request's key may do (`useKeyScopes` refuses a mutation with READ). */
  scope: KeyScope;
  /**
   * Set for a share token: the one session it reads. Then `scope` is READ and the schema lets the
   * operation reach that session only (`schema/share-scope.ts`). Null for an API key.
   */
  share: ShareGrant | null;
  /** The client the Pothos Prisma plugin resolves relations and connections with (`builder.ts`). */
  prisma: PrismaClient;
  loaders: RequestLoaders;
  /** The caps on strings and arguments for this backend, checked before any resolver runs. */
  caps: TextCaps;
  /** Where the long string arguments are token-counted before any resolver runs (schema/validate-args.ts). */
  precount: TokenPrecount;
  sessions: SessionService;
  transforms: TransformService;
  assembly: AssemblyService;
  turns: TurnService;
  reads: ReadService;
  search: MessageSearchService;
  shareLinks: ShareLinks;
  imports: ImportService;
}

/** What the event and subscription helpers use (every resolver receives the whole `RequestContext`: Pothos has one context type per builder). */
export type EventsRequestContext = Pick<RequestContext, 'workspaceId' | 'share' | 'shareLinks' | 'loaders' | 'reads'>;

/**
 * The request context factory of one app: credentials come from the `Authorization` header or, over
 * WebSocket, from `connectionParams.Authorization` (or `authorization`).
 */
export function requestContexts(runtime: AppRuntime): (source: { authorization?: string | null }) => Promise<RequestContext> {
  const { db, auth, caps, precount, sessions, transforms, assembly, turns, shareLinks } = runtime;
  const sources: LoaderSources = {
    prisma: db.prisma,
    sql: db.sql,
    sessionRows: runtime.sessionRows,
    pages: runtime.caches.pages,
    responseContentBytes: caps.responseContentBytes,
  };
  const reads = new ReadService(db.sql, db.prisma, runtime.bus, runtime.sharedReads, runtime.eventEntities, runtime.retention);
  const search = new MessageSearchService(db.sql);
  return async (source) => {
    const { workspaceId, scope, share } = await auth.grantFor(source.authorization);
    // A literal, with the Pothos cache key assigned last, not spread into it first: the spread
    // builds a larger object for every request and subscription (docs/performance.md).
    return Object.assign(
      {
        workspaceId,
        scope,
        share: share ?? null,
        prisma: db.prisma,
        loaders: new RequestLoaders(sources, workspaceId),
        caps,
        precount,
        sessions,
        transforms,
        assembly,
        turns,
        reads,
        search,
        shareLinks,
        imports: runtime.imports,
      },
      initContextCache(),
    );
  };
}

/** A copy of a subscription's request context with fresh loaders and Pothos caches, for one event (hayes/pothos#1421). */
export function requestContextForEvent(ctx: RequestContext): RequestContext {
  return { ...ctx, ...initContextCache(), loaders: ctx.loaders.fresh() };
}

/**
 * Which subscribers may share one execution of an event (`useSubscriptionSharing`): those of one
 * workspace, and a share token's only with those of the same link, since its results are cut to its
 * session (schema/share-scope.ts) and its stream ends with the link.
 */
export const sharingScopeOf = (ctx: RequestContext): string =>
  ctx.share ? `${ctx.workspaceId}/share/${ctx.share.linkId}` : ctx.workspaceId;
