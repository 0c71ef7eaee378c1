import type { Sql } from '../db/sql.js';
import { messageFromSnapshot } from '../db/session-events.js';
import { sessionInWorkspace } from '../db/stores/sessions.js';
import { countTurnMessages, findMessage, findMessagesInIndexOrder, readTurnPage } from '../db/stores/messages.js';
import { findTurnInWorkspace } from '../db/stores/turns.js';
import { contentBytesOf, type ResponseBudget } from '../domain/content-budget.js';
import { badInput } from '../domain/errors.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { DEFAULT_PAGE, decodeIndexCursor, MAX_CONNECTION_PAGE, type PageArgs } from '../domain/pagination.js';
import type { Message, PrismaClient, Session, Turn } from '../generated/prisma/client.js';
import type { EventBus, SessionEventMessage } from '../pubsub/bus.js';
import type { SharedReads } from './shared-reads.js';
import { type EventStreamSources, sessionEventStream, type SessionEventStream } from './event-stream.js';
import type { EventRetention } from './event-retention.js';
import type { RequestLoaders } from './loaders.js';
import type { ViewedMessage } from './transforms.js';

/** A value, or its promise (what a resolver may return; the memo hands out a settled value as it is). */
export type MaybePromise<T> = T | Promise<T>;

/** What events point at, read once per instance per event by every subscriber (`EventMemo`). */
export interface EventEntityMemo {
  get(eventId: string, what: string, compute: () => unknown): unknown;
}

/**
 * The message a live event carries, if it carries one: read from the event, so its execution
 * needs no context and stays synchronous. Made again per selection, not held by any memo.
 */
export function carriedMessage(event: SessionEventMessage): Message | undefined {
  return event.message ? messageFromSnapshot(event.message) : undefined;
}

/** The reads resolvers make that no loader batches: event streams and what events point at. */
export class ReadService {
  private readonly streams: EventStreamSources;

  constructor(
    private readonly sql: Sql,
    private readonly prisma: PrismaClient,
    bus: EventBus,
    /** The app's reads shared between event streams and subscription checks. */
    private readonly shared: SharedReads,
    private readonly eventEntities: EventEntityMemo,
    /** Set when EVENT_RETENTION_MS is: a replay from before the oldest kept event is refused. */
    private readonly retention: EventRetention | null = null,
  ) {
    this.streams = { sql: sql.reads, bus, shared };
  }

  /**
   * The session's event stream (it ends after SessionDeleted), or null when the session is not in
   * the workspace, whether it exists elsewhere or not at all. Reads only: on PGlite they leave the
   * kept session rows alone (caches/session-rows.ts). A replay (`afterSequence`) of events no longer
   * kept throws EVENTS_EXPIRED before the stream starts (the message names the session as `shownId`).
   */
  async sessionStream(
    workspaceId: string,
    sessionId: string,
    afterSequence: number | null,
    shownId = sessionId,
  ): Promise<SessionEventStream | null> {
    const { reads } = this.sql;
    const found = await this.shared.readFresh(`in:${workspaceId}:${sessionId}`, () => sessionInWorkspace(reads, workspaceId, sessionId));
    if (!found) return null;
    if (afterSequence !== null && this.retention) await this.retention.checkReplay(sessionId, afterSequence, shownId);
    return sessionEventStream(this.streams, sessionId, afterSequence);
  }

  /**
   * A session an event points at (`what` names the pointer: its own session, a fork, a
   * sub-session), as the workspace sees it; null once deleted.
   */
  eventSession(
    event: SessionEventMessage,
    what: string,
    sessionId: string,
    workspaceId: string,
    loaders: RequestLoaders,
  ): MaybePromise<Session | null> {
    return this.eventEntities.get(event.id, `${what}:${workspaceId}`, () =>
      loaders.sessionById.load(sessionId),
    ) as MaybePromise<Session | null>;
  }

  /** The message a replayed event names (null when it names none, or once deleted), read once per instance. */
  eventMessage(event: SessionEventMessage): MaybePromise<Message | null> {
    const messageId = event.messageId;
    if (!messageId) return null;
    return this.eventEntities.get(event.id, 'message', () => findMessage(this.prisma, messageId)) as MaybePromise<Message | null>;
  }

  /** Messages by id as seen in `viewSessionId`, in index order. */
  async messagesInView(ids: string[], viewSessionId: string): Promise<ViewedMessage[]> {
    const rows = await findMessagesInIndexOrder(this.prisma, ids);
    return rows.map((row) => ({ ...row, viewSessionId }));
  }

  /**
   * A page of a turn's messages (Relay arguments, index cursors), cut to its content bounds from
   * the end it is read from (domain/content-budget.ts), its share of `budget` reserved and settled.
   * `hasMore`: items follow it in its direction (past the page, or cut by the bounds).
   */
  async turnMessages(turnId: string, args: PageArgs, budget: ResponseBudget): Promise<{ rows: Message[]; hasMore: boolean }> {
    const fromEnd = args.last !== null && args.last !== undefined;
    const size = fromEnd ? args.last! : (args.first ?? DEFAULT_PAGE);
    if (size < 0 || size > MAX_CONNECTION_PAGE) throw badInput(`${fromEnd ? 'last' : 'first'} must be from 0 to ${MAX_CONNECTION_PAGE}.`);
    const after = args.after ? decodeIndexCursor(args.after, 'after') : -1;
    const before = args.before ? decodeIndexCursor(args.before, 'before') : 2 ** 31 - 1;
    if (size === 0) return { rows: [], hasMore: false };
    const reserved = budget.reserve(PAGE_CONTENT_BYTES);
    if (reserved === 0) return { rows: [], hasMore: true };
    const { rows, fetched } = await readTurnPage(
      this.sql.reads,
      turnId,
      { after, before, limit: size + 1, fromEnd },
      PAGE_CONTENT_BYTES,
      reserved,
    );
    // The look-ahead row, if it was kept, is not part of the page.
    const page = rows.length > size ? (fromEnd ? rows.slice(1) : rows.slice(0, size)) : rows;
    budget.settle(
      reserved,
      page.reduce((sum, row) => sum + contentBytesOf(row), 0),
    );
    return { rows: page, hasMore: fetched > page.length };
  }

  /** A turn by id when its session is in the workspace; null otherwise. */
  turnInWorkspace(turnId: string, workspaceId: string): Promise<Turn | null> {
    return findTurnInWorkspace(this.prisma, workspaceId, turnId);
  }

  /** How many messages were appended with the turn (`Turn.messages`' totalCount). */
  turnMessageCount(turnId: string): Promise<number> {
    return countTurnMessages(this.prisma, turnId);
  }
}
