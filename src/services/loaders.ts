import DataLoader from 'dataloader';
import type { Sql } from '../db/sql.js';
import type { Message, PrismaClient, Session } from '../generated/prisma/client.js';
import { createMessageRangeLoader } from '../caches/message-ranges.js';
import {
  type AttachmentPageRead,
  type AttachmentPageRow,
  type AttachmentSummary,
  findAttachmentSummaries,
  readAttachmentPages,
} from '../db/stores/attachments.js';
import { type AlternativeMember, readAlternatives, readMessagesById } from '../db/stores/branches.js';
import { findForksAt, findSessions } from '../db/stores/sessions.js';
import { readTransforms } from '../db/stores/transforms.js';
import type { FinishedRowsCache, SessionRowsCache } from '../caches/index.js';
import { ResponseBudget } from '../domain/content-budget.js';
import { foldTransforms, type HistoryTransforms } from '../domain/transforms.js';
import { createUsageLoaders, type UsageLoaders } from './usage-loaders.js';

/** What the Attachment type needs of an attachment: a loaded row, without its session and text length. */
export type AttachmentShape = Omit<AttachmentSummary, 'id' | 'sessionId' | 'chars'> & { attachmentId: string };

/** What the loaders read from: one object for the app's life, shared by every request's loaders. */
export interface LoaderSources {
  prisma: PrismaClient;
  sql: Sql;
  /** Session rows while this process is the database's only writer (PGlite); see its rule. */
  sessionRows: SessionRowsCache;
  /** Finished message rows that `Session.messages` pages are served from. */
  pages: FinishedRowsCache<Message>;
  /** The message content one operation's answer may carry (`TextCaps.responseContentBytes`). */
  responseContentBytes: number;
}

/**
 * One request's (or one subscription event's) loaders, each made on first read: a subscription
 * keeps its request context for its whole life, and most requests and events need one loader or
 * none. Getters on the prototype, so an unused set costs one small object.
 */
export class RequestLoaders {
  /** Characters of attachment content asked for so far (bounded per request, see Attachment.content). */
  attachmentCharsAsked = 0;
  /** The message content this operation's pages may still carry (domain/content-budget.ts). */
  readonly contentBudget: ResponseBudget;
  private sessions: DataLoader<string, Session | null> | undefined = undefined;
  private attachments: DataLoader<string, AttachmentShape | null> | undefined = undefined;
  private pages: DataLoader<AttachmentPageRead, AttachmentPageRow | null, string> | undefined = undefined;
  private ranges: ReturnType<typeof createMessageRangeLoader> | undefined = undefined;
  private forks: DataLoader<string, Session[]> | undefined = undefined;
  private alternativeLists: DataLoader<string, AlternativeMember[]> | undefined = undefined;
  private messages: DataLoader<string, Message | null> | undefined = undefined;
  private transforms: DataLoader<string, HistoryTransforms | null> | undefined = undefined;
  private usages: UsageLoaders | undefined = undefined;

  constructor(
    private readonly sources: LoaderSources,
    private readonly workspaceId: string,
  ) {
    this.contentBudget = new ResponseBudget(sources.responseContentBytes);
  }

  /** A fresh set for the same workspace: nothing loaded, nothing asked. */
  fresh(): RequestLoaders {
    return new RequestLoaders(this.sources, this.workspaceId);
  }

  /** Sessions of the workspace by id (kept rows first, on PGlite); shared by the loaders below that read sessions too. */
  get sessionById(): DataLoader<string, Session | null> {
    return (this.sessions ??= new DataLoader<string, Session | null>((ids) => {
      const { sessionRows, sql } = this.sources;
      return sessionRows.read(this.workspaceId, ids, (missing) => findSessions(sql.reads, this.workspaceId, missing));
    }));
  }

  /** Attachments of the workspace by id (no content), in the shape the Attachment type takes. */
  get attachmentById(): DataLoader<string, AttachmentShape | null> {
    return (this.attachments ??= new DataLoader<string, AttachmentShape | null>(async (ids) => {
      const byId = new Map((await findAttachmentSummaries(this.sources.sql, this.workspaceId, ids)).map((r) => [r.id, r]));
      return ids.map((key) => {
        const row = byId.get(key);
        if (!row) return null;
        const { id, sessionId: _session, chars: _chars, ...rest } = row;
        return { attachmentId: id, ...rest };
      });
    }));
  }

  /** Pages of attachments' text asked for by the request, read in one statement. */
  get attachmentPages(): DataLoader<AttachmentPageRead, AttachmentPageRow | null, string> {
    return (this.pages ??= new DataLoader<AttachmentPageRead, AttachmentPageRow | null, string>(
      async (reads) => {
        const rows = await readAttachmentPages(this.sources.sql, this.workspaceId, reads);
        const byOrd = new Map(rows.map((r) => [r.ord, r]));
        return reads.map((_, i) => byOrd.get(i + 1) ?? null);
      },
      { cacheKeyFn: (r) => `${r.id}/${r.offset}/${r.length}` },
    ));
  }

  get messageRange(): ReturnType<typeof createMessageRangeLoader> {
    return (this.ranges ??= createMessageRangeLoader(this.sources.sql.reads, this.sources.pages, this.contentBudget));
  }

  /** Each message's alternatives, light and in creation order (db/stores/branches.ts), for a page of messages at once. */
  get alternatives(): DataLoader<string, AlternativeMember[]> {
    return (this.alternativeLists ??= new DataLoader<string, AlternativeMember[]>(async (ids) => {
      const groups = await readAlternatives(this.sources.sql.reads, this.workspaceId, ids);
      return ids.map((id) => groups.get(id) ?? []);
    }));
  }

  /**
   * Whole message rows by id, read in one statement per batch. Only for ids a workspace-checked
   * read produced (the alternatives above): it does not check the workspace itself.
   */
  get messageById(): DataLoader<string, Message | null> {
    return (this.messages ??= new DataLoader<string, Message | null>(async (ids) => {
      const byId = new Map((await readMessagesById(this.sources.sql.reads, ids)).map((m) => [m.id, m]));
      return ids.map((id) => byId.get(id) ?? null);
    }));
  }

  /** Forks cut at each message ("branches from here"), oldest first, for a page of messages at once. */
  get forksByMessage(): DataLoader<string, Session[]> {
    return (this.forks ??= new DataLoader<string, Session[]>(async (messageIds) => {
      const rows = await findForksAt(this.sources.prisma, this.workspaceId, messageIds);
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
          return session ? foldTransforms(await readTransforms(this.sources.sql, session)) : null;
        }),
      ),
    ));
  }

  /** Usage sums of turns, sessions and fork trees. */
  get usage(): UsageLoaders {
    return (this.usages ??= createUsageLoaders(this.sources.sql));
  }
}
