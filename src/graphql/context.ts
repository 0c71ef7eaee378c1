import { DataLoader, initContextCache } from '../packages/index.js';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import type { AppConfig } from '../config.js';
import type { Database } from '../db/database.js';
import type { SqlClient } from '../db/sql.js';
import type { PrismaClient, Session } from '../generated/prisma/client.js';
import type { Logger } from '../logger.js';
import type { EventBus } from '../pubsub/event-bus.js';
import type { TextCaps } from '../domain/parts.js';
import { createMessageRangeLoader } from '../caches/message-ranges.js';
import { findAttachmentSummaries, readAttachmentPages, type AttachmentPageRead, type AttachmentPageRow } from '../db/stores/attachments.js';
import type { AttachmentShape } from '../schema/attachment.js';
import { findForksAt, findSessions } from '../db/stores/sessions.js';
import type { AssemblyCaches, SessionRowsCache } from '../caches/index.js';
import type { AssemblyService } from '../services/assembly.js';
import type { EventMemo } from '../live/sharing.js';
import type { SessionService } from '../services/sessions.js';
import type { TransformService } from '../services/transforms.js';
import { readTransforms } from '../db/stores/transforms.js';
import { foldTransforms, type HistoryTransforms } from '../domain/transforms.js';
import type { TurnService } from '../services/turns.js';

/**
 * The long-lived parts of one app instance, shared by every request: configuration, logger,
 * database, pub/sub, auth and the services (src/services/) that orchestrate writes and assembly.
 */
export interface AppRuntime {
  config: AppConfig;
  /** The caps on strings, attachments, arguments and bodies for this backend (MAX_STRING_CHARS, `textCaps`). */
  caps: TextCaps;
  logger: Logger;
  db: Database;
  bus: EventBus;
  auth: WorkspaceAuth;
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
  eventEntities: EventMemo<unknown>;
}

/** One request's (or one WebSocket operation's) GraphQL context: who is asking, and its loaders. */
export interface RequestContext {
  runtime: AppRuntime;
  prisma: PrismaClient;
  workspaceId: string;
  loaders: RequestLoaders;
}

/**
 * One request's loaders, each made on first read: a subscription keeps its context for its whole
 * life, and most requests and events need one loader or none. Getters on the prototype, so an
 * unused set costs one small object (it was six closures, their scopes and accessors per context,
 * kept by every subscribed socket).
 */
export class RequestLoaders {
  /** Characters of attachment content asked for so far (bounded per request, see Attachment.content). */
  attachmentCharsAsked = 0;
  private sessions: DataLoader<string, Session | null> | undefined = undefined;
  private attachments: DataLoader<string, AttachmentShape | null> | undefined = undefined;
  private pages: DataLoader<AttachmentPageRead, AttachmentPageRow | null, string> | undefined = undefined;
  private ranges: ReturnType<typeof createMessageRangeLoader> | undefined = undefined;
  private forks: DataLoader<string, Session[]> | undefined = undefined;
  private transforms: DataLoader<string, HistoryTransforms | null> | undefined = undefined;

  constructor(
    private readonly runtime: AppRuntime,
    private readonly workspaceId: string,
  ) {}

  private get prisma(): PrismaClient {
    return this.runtime.db.prisma;
  }

  private get sql(): SqlClient {
    return this.runtime.db.sql;
  }

  /** Sessions of the workspace by id (kept rows first, on PGlite); shared by the loaders below that read sessions too. */
  get sessionById(): DataLoader<string, Session | null> {
    return (this.sessions ??= new DataLoader<string, Session | null>(async (ids) => {
      const { sessionRows, db } = this.runtime;
      const kept = ids.map((id) => sessionRows.get(id, this.workspaceId));
      const missing = ids.filter((_, i) => !kept[i]);
      if (!missing.length) return kept as Session[];
      const mark = sessionRows.mark();
      const rows = await findSessions(db.sql.reads, this.workspaceId, missing);
      sessionRows.keep(mark, rows);
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id, i) => kept[i] ?? byId.get(id) ?? null);
    }));
  }

  /** Attachments of the workspace by id (no content), in the shape the Attachment type takes. */
  get attachmentById(): DataLoader<string, AttachmentShape | null> {
    return (this.attachments ??= new DataLoader<string, AttachmentShape | null>(async (ids) => {
      const byId = new Map((await findAttachmentSummaries(this.sql, this.workspaceId, ids)).map((r) => [r.id, r]));
      return ids.map((id) => {
        const row = byId.get(id);
        return row ? { attachmentId: row.id, name: row.name, mimeType: row.mimeType, size: row.size } : null;
      });
    }));
  }

  /** Pages of attachments' text asked for by the request, read in one statement. */
  get attachmentPages(): DataLoader<AttachmentPageRead, AttachmentPageRow | null, string> {
    return (this.pages ??= new DataLoader<AttachmentPageRead, AttachmentPageRow | null, string>(
      async (reads) => {
        const rows = await readAttachmentPages(this.sql, this.workspaceId, reads);
        const byOrd = new Map(rows.map((r) => [r.ord, r]));
        return reads.map((_, i) => byOrd.get(i + 1) ?? null);
      },
      { cacheKeyFn: (r) => `${r.id}/${r.offset}/${r.length}` },
    ));
  }

  get messageRange(): ReturnType<typeof createMessageRangeLoader> {
    return (this.ranges ??= createMessageRangeLoader(this.runtime.db.sql.reads, this.runtime.caches.pages));
  }

  /** Forks cut at each message ("branches from here"), oldest first, for a page of messages at once. */
  get forksByMessage(): DataLoader<string, Session[]> {
    return (this.forks ??= new DataLoader<string, Session[]>(async (messageIds) => {
      const rows = await findForksAt(this.prisma, this.workspaceId, messageIds);
      const byMessage = new Map<string, Session[]>();
      for (const row of rows) {
        const forks = byMessage.get(row.forkPointMessageId!);
        if (forks) forks.push(row);
        else byMessage.set(row.forkPointMessageId!, [row]);
      }
      return messageIds.map((id) => byMessage.get(id) ?? []);
    }));
  }

  /** The history transforms in force in each session's view (no statement for a session that has none). */
  get transformsBySession(): DataLoader<string, HistoryTransforms | null> {
    return (this.transforms ??= new DataLoader<string, HistoryTransforms | null>((ids) =>
      Promise.all(
        ids.map(async (id) => {
          const session = await this.sessionById.load(id);
          return session ? foldTransforms(await readTransforms(this.sql, session)) : null;
        }),
      ),
    ));
  }
}

/**
 * Builds the context for HTTP and WebSocket alike: credentials come from the `Authorization`
 * header or, over WebSocket, from `connectionParams.Authorization` (or `authorization`).
 */
export async function createRequestContext(runtime: AppRuntime, source: { authorization?: string | null }): Promise<RequestContext> {
  const workspaceId = await runtime.auth.workspaceFor(source.authorization);
  const prisma = runtime.db.prisma;
  return {
    ...initContextCache(),
    runtime,
    prisma,
    workspaceId,
    loaders: new RequestLoaders(runtime, workspaceId),
  };
}

/** A copy of a subscription's context with fresh loaders and Pothos caches, for one event (hayes/pothos#1421). */
export function contextForEvent(ctx: RequestContext): RequestContext {
  return { ...ctx, ...initContextCache(), loaders: new RequestLoaders(ctx.runtime, ctx.workspaceId) };
}
