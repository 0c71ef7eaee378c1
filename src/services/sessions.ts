import { createHash } from 'node:crypto';
import { uuidv7 } from '../db/ids.js';
import { asSql, isRetryableSqlError, type Sql, type SqlClient, type SqlTarget, type Tx } from '../db/sql.js';
import { createAttachment } from '../db/stores/attachments.js';
import { createCompaction } from '../db/stores/compactions.js';
import { appendMessageRows, appendTextRow, type AppendedMessage } from '../db/stores/append.js';
import { appendEvents, appendSubSessionWrappers, MAX_SUB_SESSION_DEPTH } from '../db/stores/events.js';
import { buildTimeline, type Timeline } from '../domain/timeline.js';
import { toGlobalId } from '../schema/ids.js';
import {
  contentColumns,
  findGenerating,
  findMessageSession,
  findToolCalls,
  lockMessage,
  type MessageSnapshot,
  messageSnapshot,
  updateMessageContent,
} from '../db/stores/messages.js';
import * as sessionStore from '../db/stores/sessions.js';
import type { LockedSession } from '../db/stores/sessions.js';
import { forkTitleBase, nextForkTitle } from '../domain/fork-title.js';
import { childLineage, clipSegments, ownerOf, visibleSegments } from '../domain/lineage.js';
import {
  draftMessage,
  LIMITS,
  toolCallIdsOf,
  toolResultIdsOf,
  type DraftMessage,
  type DraftPart,
  type MessageInputData,
  type PartInput,
  type TextCaps,
} from '../domain/parts.js';
import { countTokens, partTokenTexts } from '../domain/tokens.js';
import { precount } from '../domain/token-precount.js';
import type { StoredPart } from '../domain/types.js';
import { badInput, DomainError, notFound } from '../graphql/errors.js';
import { Prisma, type Message, type PrismaClient, type Session } from '../generated/prisma/client.js';
import type { EventBus, SessionEventMessage } from '../pubsub/event-bus.js';
import type { AssemblyCaches } from '../caches/index.js';
import { publishAll, sessionDeletedEvent, writeThenPublish } from './event-log.js';
import { AppendBatcher } from './append-batcher.js';
import { touchIfActive, turnStatusIn } from '../db/stores/turns.js';
import { requiredKey, turnNotActive } from '../domain/turns.js';

export type { LockedSession } from '../db/stores/sessions.js';

export const DEFAULT_TITLE = 'Untitled session';
const RECENT_WINDOW = 64;
/** The most sessions (a session and its nested sub-agent sessions) a timeline spans. */
export const MAX_TIMELINE_SESSIONS = 10_000;

/**
 * Writes to sessions and their messages. Every write locks the session row it changes
 * (`SELECT … FOR UPDATE`), so appends, forks and compactions of one session are serialized on one
 * server or many, and publishes its events only after the transaction commits.
 */
export class SessionService {
  /** Plain appends arriving together are written together (see append-batcher.ts). */
  private readonly batcher: AppendBatcher;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: Sql,
    private readonly bus: EventBus,
    private readonly caches: Pick<AssemblyCaches, 'forget'>,
    /** The backend's caps (`AppRuntime.caps`): what a message's text may grow to. */
    private readonly caps: TextCaps,
  ) {
    this.batcher = new AppendBatcher(sql);
  }

  /** Runs `work` in a Prisma transaction, retrying serialization failures and deadlocks, then publishes. */
  write<T>(work: (tx: Tx, events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return this.retrying((events) => this.prisma.$transaction((tx) => work(tx, events)));
  }

  /** `write` in a plain SQL transaction, for the hot paths (see db/sql.ts). */
  writeSql<T>(work: (sql: SqlClient, events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return this.retrying((events) => this.sql.transaction((sql) => work(sql, events)));
  }

  private retrying<T>(run: (events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return writeThenPublish(this.bus, run, isRetryable);
  }

  async lock(db: SqlTarget, workspaceId: string, sessionId: string, clientId = sessionId): Promise<LockedSession> {
    const row = await sessionStore.lockSession(db, workspaceId, sessionId);
    if (!row) throw notFound('Session', clientId);
    return row;
  }

  /**
   * Locks the root of the session's fork tree, in one statement. Forks and deletes take it first
   * (then the session itself), so concurrent forks anywhere in one tree get distinct numbers and a
   * delete never races a fork of a session it removes.
   */
  async lockTreeRoot(db: SqlTarget, workspaceId: string, sessionId: string, clientId = sessionId): Promise<LockedSession> {
    const row = await sessionStore.lockTreeRoot(db, workspaceId, sessionId);
    if (!row) throw notFound('Session', clientId);
    return row;
  }

  async createSession(
    workspaceId: string,
    input: {
      title?: string | null;
      settings?: unknown;
      metadata?: unknown;
      messages?: MessageInputData[] | null;
      parentTurnId?: string | null;
      agentId?: string | null;
    },
    parentTurnLabel = input.parentTurnId ?? undefined,
  ): Promise<Session> {
    const title = checkTitle(input.title ?? DEFAULT_TITLE);
    const settings = jsonObject(input.settings ?? {}, 'settings');
    const metadata = jsonObject(input.metadata ?? {}, 'metadata');
    const drafts = draftBatch(input.messages ?? [], true, this.caps);
    const parentTurnId = input.parentTurnId ?? null;
    const hasAgent = input.agentId !== undefined && input.agentId !== null;
    if (parentTurnId && !hasAgent) throw badInput('createSession: a sub-agent session (parentTurnId) needs the agentId that runs it.');
    if (!parentTurnId && hasAgent) throw badInput('createSession: agentId names the agent of a sub-agent session; give parentTurnId too.');
    const agentId = hasAgent ? requiredKey(input.agentId!, 'agentId') : null;
    const id = uuidv7();
    return this.write(async (tx, events) => {
      let parentSessionId: string | null = null;
      let sub: Pick<Prisma.SessionUncheckedCreateInput, 'kind' | 'parentTurnId' | 'parentMessageCount' | 'agentId'> = {};
      if (parentTurnId) {
        // The parent session's lock orders this with the turn's end (completeAgent, cancelTurn and
        // the sweeper take it too): a sub-session is only ever made in a turn that is still ACTIVE.
        const found = await sessionStore.findTurnSession(tx, workspaceId, parentTurnId);
        if (!found) throw notFound('Turn', parentTurnLabel);
        const parent = await this.lock(tx, workspaceId, found.sessionId);
        const status = await turnStatusIn(asSql(tx), parent.id, parentTurnId);
        if (!status) throw notFound('Turn', parentTurnLabel);
        if (status !== 'ACTIVE') throw turnNotActive(status, parentTurnLabel!);
        const depth = await sessionStore.subSessionDepth(tx, parent.id, MAX_SUB_SESSION_DEPTH);
        if (depth + 1 > MAX_SUB_SESSION_DEPTH) {
          throw badInput(
            `Sub-agent sessions nest at most ${MAX_SUB_SESSION_DEPTH} levels deep; turn ${parentTurnLabel} is already that deep.`,
          );
        }
        sub = { kind: 'SUB_AGENT', parentTurnId, parentMessageCount: parent.messageCount, agentId };
        parentSessionId = parent.id;
      }
      const created = await sessionStore.createSession(tx, {
        id,
        rootId: id,
        ancestorIds: [],
        workspaceId,
        title,
        settings,
        metadata,
        ...sub,
      });
      if (sub.parentTurnId) {
        // The parent's stream learns of the sub-session before any of its (wrapped) events.
        events.push(
          ...(await appendEvents(tx, parentSessionId!, [
            { type: 'SUB_SESSION_CREATED', turnId: parentTurnId, payload: { subSessionId: id, agentId, title } },
          ])),
        );
      }
      if (drafts.length === 0) return created;
      // Nobody else sees the new row before the commit: no lock to take.
      return (await this.insertMessages(tx, created, drafts, { turnId: null, agentId: agentId }, events)).session;
    });
  }

  /**
   * The timeline of a session: its messages with those of the sub-agent sessions nested in its
   * turns (recursively) interleaved where each sub-session was made (see domain/timeline.ts).
   * Refused when the tree holds more than MAX_TIMELINE_SESSIONS sessions.
   */
  async timeline(sessionId: string): Promise<Timeline> {
    const rows = await sessionStore.readAgentTree(this.sql, sessionId, MAX_SUB_SESSION_DEPTH, MAX_TIMELINE_SESSIONS + 1);
    if (rows.length > MAX_TIMELINE_SESSIONS) {
      throw badInput(`This session has more than ${MAX_TIMELINE_SESSIONS} nested sub-agent sessions; read their timelines one by one.`);
    }
    if (rows.length === 0)
      return buildTimeline(sessionId, [{ id: sessionId, parentSessionId: null, parentMessageCount: 0, messageCount: 0, order: 0 }]);
    return buildTimeline(
      sessionId,
      rows.map((row, order) => ({ ...row, order })),
    );
  }

  async updateSession(
    workspaceId: string,
    sessionId: string,
    input: { title?: string | null; settings?: unknown; metadata?: unknown },
    clientId?: string,
  ): Promise<Session> {
    const data: Prisma.SessionUncheckedUpdateInput = {};
    if (input.title !== undefined && input.title !== null) data.title = checkTitle(input.title);
    if (input.settings !== undefined && input.settings !== null) data.settings = jsonObject(input.settings, 'settings');
    if (input.metadata !== undefined && input.metadata !== null) data.metadata = jsonObject(input.metadata, 'metadata');
    if (Object.keys(data).length === 0) throw badInput('updateSession: give at least one of title, settings, metadata.');
    return this.write(async (tx, events) => {
      await this.lock(tx, workspaceId, sessionId, clientId);
      const session = await sessionStore.updateSession(tx, sessionId, data);
      events.push(...(await appendEvents(tx, sessionId, [{ type: 'SESSION_UPDATED', payload: { fields: Object.keys(data).sort() } }])));
      return session;
    });
  }

  /**
   * Deletes a session, or with `cascade` its whole subtree of forks, and forgets what this
   * instance's caches keep of them. Returns the deleted ids.
   */
  async deleteSession(workspaceId: string, sessionId: string, cascade: boolean, clientId?: string): Promise<string[]> {
    const ids = await this.write(async (tx, events) => {
      const root = await this.lockTreeRoot(tx, workspaceId, sessionId, clientId);
      if (root.id !== sessionId) await this.lock(tx, workspaceId, sessionId, clientId);
      const descendants = await sessionStore.findDescendants(tx, sessionId);
      if (descendants.length > 0 && !cascade) {
        throw new DomainError(
          'SESSION_HAS_FORKS',
          `This session has ${descendants.length} fork(s); delete them first or pass cascade: true to delete the whole subtree.`,
          { forkCount: descendants.length },
        );
      }
      const ids = [...descendants.map((d) => d.id), sessionId];
      // Sub-agent sessions go with the turns they run in (and their forks with them): locked, so
      // none gains a fork or a sub-session of its own before the delete.
      const nested = await sessionStore.lockNestedSubSessions(tx, ids);
      // A sub-session deleted on its own: the sessions above it keep its SessionDeleted, wrapped.
      const head = await sessionStore.readEventHead(tx, sessionId);
      if (head?.parentTurnId) {
        events.push(...(await appendSubSessionWrappers(tx, sessionId, [sessionDeletedEvent(sessionId, head.eventSequence)])));
      }
      const all = [...nested.map((n) => n.id), ...ids];
      const deleted = await sessionStore.deleteSessions(tx, all);
      events.push(...deleted.map((row) => sessionDeletedEvent(row.id, row.eventSequence)));
      return all;
    });
    for (const id of ids) this.caches.forget(id);
    return ids;
  }

  async appendMessages(
    workspaceId: string,
    sessionId: string,
    inputs: MessageInputData[],
    options: { turnId: string | null; agentId: string | null; turnLabel?: string },
    clientId?: string,
  ): Promise<{ session: Session; messages: Message[] }> {
    const drafts = draftBatch(inputs, false, this.caps);
    if (options.agentId !== null && !options.agentId.trim()) throw badInput('agentId must not be empty.');
    if (options.turnId === null && unansweredToolResults(drafts).size === 0 && !drafts.some(hasUpload)) {
      // Nothing to check against the database and nothing to store but the rows: the append is one
      // statement (see db/stores/append.ts), its tokens counted before it is sent.
      const prepared = await prepareMessages(drafts as StoredDraft[], options.agentId);
      // Written with the other calls of the moment in one statement (see append-batcher.ts).
      const batched = await this.batcher.append({ workspaceId, sessionId, messages: prepared }, (session, now) => {
        const events: SessionEventMessage[] = [];
        const result = this.appended(session, prepared, null, now, events);
        publishAll(this.bus, events);
        return result;
      });
      if (batched.kind === 'appended') return batched.result;
      if (batched.kind === 'locked') {
        // The session is held by another transaction: this statement waits for it.
        const fast = await this.retrying(async (events) => {
          const now = new Date();
          const session = await appendMessageRows(this.sql, workspaceId, sessionId, null, prepared, now, false);
          return session && this.appended(session, prepared, null, now, events);
        });
        if (fast) return fast;
      }
      // Not appended: no such session (the locked path below says so) or a sub-session (whose
      // events are wrapped into the logs above it, in a transaction).
    }
    return this.write(async (tx, events) => {
      const session = await this.lock(tx, workspaceId, sessionId, clientId);
      if (options.turnId) {
        const status = await turnStatusIn(asSql(tx), sessionId, options.turnId);
        const turnLabel = options.turnLabel ?? options.turnId;
        if (!status) throw notFound('Turn', turnLabel);
        if (status !== 'ACTIVE') throw turnNotActive(status, turnLabel);
        await touchIfActive(asSql(tx), options.turnId, new Date());
      }
      return this.insertMessages(tx, session, drafts, options, events);
    });
  }

  private async insertMessages(
    tx: Tx,
    session: LockedSession,
    drafts: DraftMessage[],
    options: { turnId: string | null; agentId: string | null },
    events: SessionEventMessage[],
  ): Promise<{ session: Session; messages: Message[] }> {
    await this.checkToolResults(
      tx,
      session,
      drafts.map((d) => d.parts),
    );
    const stored: StoredDraft[] = [];
    for (const draft of drafts) stored.push({ ...draft, parts: await this.storeAttachments(tx, session, draft.parts) });
    const prepared = await prepareMessages(stored, options.agentId);
    const now = new Date();
    const updated = await appendMessageRows(tx, session.workspaceId, session.id, options.turnId, prepared, now, true);
    // The session is locked by this transaction: it cannot have gone.
    const added = events.length;
    const result = this.appended(updated!, prepared, options.turnId, now, events);
    if (updated!.parentTurnId) events.push(...(await appendSubSessionWrappers(tx, session.id, events.slice(added))));
    return result;
  }

  /** The rows an append wrote, and its events to publish, from the session row it left. */
  private appended(
    session: Session,
    prepared: AppendedMessage[],
    turnId: string | null,
    now: Date,
    events: SessionEventMessage[],
  ): { session: Session; messages: Message[] } {
    const firstPosition = session.messageCount - prepared.length;
    const firstSequence = session.eventSequence - prepared.length + 1;
    const messages = prepared.map(
      (m, i): Message => ({
        id: m.id,
        sessionId: session.id,
        position: firstPosition + i,
        role: m.role,
        ...m.content,
        turnId,
        agentId: m.agentId,
        createdAt: m.createdAt,
        updatedAt: m.createdAt,
      }),
    );
    events.push(
      ...messages.map(
        (row, i): SessionEventMessage => ({
          id: prepared[i].eventId,
          sessionId: session.id,
          sequence: firstSequence + i,
          type: 'MESSAGE_ADDED',
          turnId,
          messageId: row.id,
          payload: { index: row.position, role: row.role, generating: row.generating },
          createdAt: now.toISOString(),
          ...withSnapshot(row),
        }),
      ),
    );
    return { session, messages };
  }

  /** A tool result must name a call made earlier in the session (or earlier in the same batch). */
  private async checkToolResults(tx: Tx, session: LockedSession, batches: DraftPart[][]) {
    const missing = unansweredToolResults(batches.map((parts) => ({ parts })));
    if (missing.size === 0) return;
    const segments = visibleSegments(session);
    const findCalls = async (lo: number, hi: number) => {
      for (const id of await findToolCalls(tx, clipSegments(segments, lo, hi), [...missing])) missing.delete(id);
    };
    // Results almost always answer a recent call: look there first, then the whole history.
    const recent = Math.max(0, session.messageCount - RECENT_WINDOW);
    await findCalls(recent, session.messageCount);
    if (missing.size > 0 && recent > 0) await findCalls(0, recent);
    if (missing.size > 0) {
      const [first] = missing;
      throw badInput(`Tool result for call id "${first}" does not answer any tool call made earlier in this session.`, {
        callIds: [...missing],
      });
    }
  }

  private async storeAttachments(tx: Tx, session: LockedSession, parts: DraftPart[]): Promise<StoredPart[]> {
    const stored: StoredPart[] = [];
    for (const part of parts) {
      if (part.type !== 'attachmentUpload') {
        stored.push(part);
        continue;
      }
      const size = Buffer.byteLength(part.content, 'utf8');
      const attachment = await createAttachment(tx, {
        id: uuidv7(),
        workspaceId: session.workspaceId,
        sessionId: session.id,
        name: part.name,
        mimeType: part.mimeType,
        size,
        sha256: createHash('sha256').update(part.content).digest('hex'),
        content: part.content,
      });
      stored.push({ type: 'attachment', attachmentId: attachment.id, name: part.name, mimeType: part.mimeType, size });
    }
    return stored;
  }

  /** Changes a message that is still generating; a finished message never changes. */
  async updateMessage(
    workspaceId: string,
    messageId: string,
    input: { appendText?: string | null; parts?: PartInput[] | null; generating?: boolean | null },
    clientId?: string,
  ): Promise<Message> {
    const hasAppend = input.appendText !== undefined && input.appendText !== null;
    const hasParts = input.parts !== undefined && input.parts !== null;
    if (hasAppend && hasParts) throw badInput('updateMessage: give `appendText` or `parts`, not both.');
    if (!hasAppend && !hasParts && (input.generating === undefined || input.generating === null)) {
      throw badInput('updateMessage: nothing to change; give appendText, parts or generating.');
    }
    if (hasAppend && !hasParts && (input.generating ?? true)) {
      // Streaming: one statement (see db/stores/append.ts). When it does not decide (unknown,
      // finished or TOOL message, text near the cap), it writes nothing and the general path below
      // answers with the exact reason.
      const appendText = input.appendText!;
      const streamed = await this.retrying(async (events) => {
        const now = new Date();
        const eventId = uuidv7();
        const done = await appendTextRow(this.sql, workspaceId, messageId, appendText, eventId, now, this.caps.stringLength);
        if (!done) return null;
        const { message, sequence } = done;
        events.push({
          id: eventId,
          sessionId: message.sessionId,
          sequence,
          type: 'MESSAGE_UPDATED',
          turnId: message.turnId,
          messageId,
          payload: { index: message.position, generating: true, appendText },
          createdAt: now.toISOString(),
          ...withSnapshot(message),
        });
        return message;
      });
      if (streamed) return this.rewrote(streamed);
    }
    const updated = await this.write(async (tx, events) => {
      const found = await findMessageSession(tx, workspaceId, messageId);
      if (!found) throw notFound('Message', clientId ?? messageId);
      const session = await this.lock(tx, workspaceId, found.sessionId);
      const message = await lockMessage(tx, messageId);
      if (!message.generating) {
        throw new DomainError('MESSAGE_IMMUTABLE', 'This message is finished and can no longer change.', {
          messageId: clientId ?? messageId,
        });
      }
      let parts = message.parts as unknown as StoredPart[];
      if (hasParts) {
        const draft = draftMessage({ role: message.role, parts: input.parts! }, 'parts', this.caps);
        await this.checkToolResults(tx, { ...session, messageCount: message.position }, [draft.parts]);
        parts = await this.storeAttachments(tx, session, draft.parts);
      }
      if (hasAppend) {
        if (message.role === 'TOOL') throw badInput('appendText cannot add text to a TOOL message.');
        const last = parts[parts.length - 1];
        parts =
          last?.type === 'text'
            ? [...parts.slice(0, -1), { type: 'text', text: last.text + input.appendText }]
            : [...parts, { type: 'text', text: input.appendText! }];
      }
      // Streaming into a turn's message is the turn's activity: it keeps the sweeper away.
      if (message.turnId) await touchIfActive(asSql(tx), message.turnId, new Date());
      const generating = input.generating ?? true;
      if (hasAppend && joinedLength(parts) > this.caps.stringLength) {
        throw badInput(
          `appendText: the message's text would be longer than ${this.caps.stringLength} characters; continue in a new message.`,
        );
      }
      if (!generating) await precountFinished([parts]);
      const updated = await updateMessageContent(tx, messageId, parts, generating);
      const payload: Record<string, unknown> = { index: message.position, generating };
      if (hasAppend) payload.appendText = input.appendText;
      events.push(
        ...(await appendEvents(tx, session.id, [
          { type: 'MESSAGE_UPDATED', messageId, turnId: message.turnId, payload, message: updated },
        ])),
      );
      return updated;
    });
    return this.rewrote(updated);
  }

  /**
   * Tells the database that `message` was rewritten: the new version holds its whole text twice
   * (text and parts), and the old one is now dead (PGlite reclaims it only when asked: db/sql.ts).
   */
  private rewrote(message: Message): Message {
    this.sql.rewroteMessageText?.(2 * message.text.length);
    return message;
  }

  /**
   * Forks `sessionId` at `messageIndex`: the fork sees the parent's messages [0, messageIndex) by
   * reference (no row is copied, so the cost does not grow with the parent's length), carries its
   * settings and metadata, and leaves out the USER message at the cut, which is returned.
   */
  async forkSession(
    workspaceId: string,
    input: {
      sessionId: string;
      messageIndex?: number | null;
      messageId?: string | null;
      timelineIndex?: number | null;
      title?: string | null;
    },
    clientId?: string,
  ): Promise<{ session: Session; excludedMessage: Message }> {
    const byTimeline = input.timelineIndex !== undefined && input.timelineIndex !== null;
    let byIndex = input.messageIndex !== undefined && input.messageIndex !== null;
    const byId = input.messageId !== undefined && input.messageId !== null;
    if (Number(byIndex) + Number(byId) + Number(byTimeline) !== 1) {
      throw badInput('forkSession: give exactly one of messageIndex, messageId and timelineIndex.');
    }
    if (byTimeline) {
      input = { ...input, messageIndex: await this.timelineForkIndex(workspaceId, input.sessionId, input.timelineIndex!, clientId) };
      byIndex = true;
    }
    const title = input.title === undefined || input.title === null ? null : checkTitle(input.title);
    // Plain SQL: four statements in one transaction, whatever the parent's length (see db/sql.ts).
    return this.writeSql(async (sql, events) => {
      const root = await this.lockTreeRoot(sql, workspaceId, input.sessionId, clientId);
      const parent = root.id === input.sessionId ? root : await this.lock(sql, workspaceId, input.sessionId, clientId);
      if (byIndex) {
        const index = input.messageIndex!;
        if (!Number.isInteger(index) || index < 0 || index >= parent.messageCount) {
          throw new DomainError(
            'FORK_INDEX_OUT_OF_RANGE',
            `messageIndex ${index} is outside this session's messages (valid: 0 to ${parent.messageCount - 1}).`,
            { messageIndex: index, messageCount: parent.messageCount },
          );
        }
      }
      const base = forkTitleBase(parent.title);
      const at = byIndex ? { owner: ownerOf(parent, input.messageIndex!), index: input.messageIndex! } : { messageId: input.messageId! };
      const cut = await sessionStore.readForkPoint(sql, parent, at, base);
      if (!cut || ownerOf(parent, cut.message.position) !== cut.message.sessionId) {
        throw notFound('Message in this session', input.messageId ?? String(input.messageIndex));
      }
      const { message: excluded, generatingAt, highestFork } = cut;
      const index = excluded.position;
      if (excluded.role !== 'USER') {
        throw new DomainError('FORK_POINT_NOT_USER_MESSAGE', `A fork is cut at a USER message; message ${index} is ${excluded.role}.`, {
          messageIndex: index,
          role: excluded.role,
        });
      }
      if (generatingAt !== null) {
        throw badInput(`Message ${generatingAt} is still generating; fork at or before it, or wait until it is finished.`);
      }
      const forkTitle = title ?? nextForkTitle(base, highestFork === null ? null : BigInt(highestFork));
      const id = uuidv7();
      const session = await sessionStore.insertFork(sql, {
        id,
        workspaceId,
        title: forkTitle,
        settings: parent.settings,
        metadata: parent.metadata,
        parentId: parent.id,
        rootId: parent.rootId,
        ancestorIds: [...(parent.ancestorIds ?? []), parent.id],
        depth: parent.depth + 1,
        forkIndex: index,
        forkPointMessageId: excluded.id,
        lineage: childLineage(parent, index) as unknown as Prisma.JsonValue,
        messageCount: index,
        createdAt: new Date(),
      });
      events.push(
        ...(await appendEvents(sql, parent.id, [
          { type: 'SESSION_FORKED', messageId: excluded.id, payload: { forkId: id, messageIndex: index, title: forkTitle } },
        ])),
      );
      return { session, excludedMessage: excluded };
    });
  }

  /**
   * The messageIndex of the session's own message at a timeline position: refused with
   * FORK_POINT_IN_SUB_SESSION when the position is a message of a nested sub-agent session (fork
   * that sub-session itself instead), FORK_INDEX_OUT_OF_RANGE outside the timeline.
   */
  private async timelineForkIndex(workspaceId: string, sessionId: string, timelineIndex: number, clientId?: string): Promise<number> {
    const exists = await this.prisma.session.findFirst({ where: { id: sessionId, workspaceId }, select: { id: true } });
    if (!exists) throw notFound('Session', clientId ?? sessionId);
    const timeline = await this.timeline(sessionId);
    const at = timeline.at(timelineIndex);
    if (!at) {
      throw new DomainError(
        'FORK_INDEX_OUT_OF_RANGE',
        `timelineIndex ${timelineIndex} is outside this session's timeline (valid: 0 to ${timeline.length - 1}).`,
        { timelineIndex, timelineLength: timeline.length },
      );
    }
    if (at.sessionId !== sessionId) {
      throw new DomainError(
        'FORK_POINT_IN_SUB_SESSION',
        `Timeline item ${timelineIndex} is message ${at.lo} of sub-agent session ${toGlobalId('Session', at.sessionId)}, not of this session; fork that sub-session instead.`,
        { timelineIndex, subSessionId: toGlobalId('Session', at.sessionId), messageIndex: at.lo },
      );
    }
    return at.lo;
  }

  /** Records a summary that replaces messages [0, uptoIndex) in assembled contexts from now on. */
  async compactSession(
    workspaceId: string,
    input: { sessionId: string; uptoIndex: number; summary: string },
    clientId?: string,
  ): Promise<Session> {
    if (!input.summary.trim()) throw badInput('compactSession: summary must not be empty.');
    return this.write(async (tx, events) => {
      const session = await this.lock(tx, workspaceId, input.sessionId, clientId);
      if (!Number.isInteger(input.uptoIndex) || input.uptoIndex < 1 || input.uptoIndex > session.messageCount) {
        throw badInput(`uptoIndex must be from 1 to ${session.messageCount} (the session's message count).`, {
          uptoIndex: input.uptoIndex,
        });
      }
      const generating = await findGenerating(tx, clipSegments(visibleSegments(session), 0, input.uptoIndex));
      if (generating) throw badInput(`Message ${generating.position} is still generating and cannot be summarized yet.`);
      const ordinal = session.compactionCount + 1;
      const compaction = await createCompaction(tx, {
        id: uuidv7(),
        sessionId: session.id,
        ordinal,
        uptoIndex: input.uptoIndex,
        summary: input.summary,
        tokensO200k: countTokens(input.summary, 'O200K_BASE'),
        tokensCl100k: countTokens(input.summary, 'CL100K_BASE'),
      });
      const updated = await sessionStore.updateSession(tx, session.id, { compactionCount: ordinal });
      events.push(
        ...(await appendEvents(tx, session.id, [
          { type: 'SESSION_COMPACTED', payload: { compactionId: compaction.id, uptoIndex: input.uptoIndex } },
        ])),
      );
      return updated;
    });
  }
}

/** A draft whose attachments are stored: its parts are the parts to store. */
type StoredDraft = Omit<DraftMessage, 'parts'> & { parts: StoredPart[] };

const hasUpload = (draft: DraftMessage) => draft.parts.some((part) => part.type === 'attachmentUpload');

/** Tool results of the batch that no earlier message of the same batch answers. */
function unansweredToolResults(batch: readonly { parts: readonly DraftPart[] }[]): Set<string> {
  const seen = new Set<string>();
  const missing = new Set<string>();
  for (const { parts } of batch) {
    for (const id of toolResultIdsOf(parts)) if (!seen.has(id)) missing.add(id);
    for (const id of toolCallIdsOf(parts)) seen.add(id);
  }
  return missing;
}

/**
 * Ids, token counts and the other content columns of messages to append, computed before any lock
 * is taken: long texts are counted in the token worker, short ones here.
 */
async function prepareMessages(drafts: readonly StoredDraft[], agentId: string | null): Promise<AppendedMessage[]> {
  await precountFinished(drafts.filter((d) => !d.generating).map((d) => d.parts));
  const now = Date.now();
  return drafts.map((draft, i) => ({
    id: uuidv7(),
    eventId: uuidv7(),
    role: draft.role,
    content: contentColumns(draft.parts, draft.generating),
    agentId: draft.agentId ?? agentId,
    // Strictly increasing timestamps within a batch keep createdAt order equal to index order.
    createdAt: new Date(now + i),
  }));
}

function draftBatch(inputs: MessageInputData[], allowEmpty: boolean, caps: TextCaps): DraftMessage[] {
  if (!allowEmpty && inputs.length === 0) throw badInput('messages must not be empty.');
  if (inputs.length > LIMITS.messagesPerCall) throw badInput(`At most ${LIMITS.messagesPerCall} messages per call.`);
  return inputs.map((input, i) => draftMessage(input, `messages[${i}]`, caps));
}

function checkTitle(title: string): string {
  if (title.length > LIMITS.titleChars) throw badInput(`title is longer than ${LIMITS.titleChars} characters.`);
  return title;
}

function jsonObject(value: unknown, name: string): Prisma.InputJsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badInput(`${name} must be a JSON object.`);
  }
  return value as Prisma.InputJsonObject;
}

function isRetryable(error: unknown): boolean {
  if (isRetryableSqlError(error)) return true;
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (error.code === 'P2034') return true;
  const meta = error.meta as { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } } | undefined;
  return isRetryableSqlError({ code: meta?.code ?? meta?.driverAdapterError?.cause?.originalCode });
}

/** Characters of a message's text parts together. */
function joinedLength(parts: readonly StoredPart[]): number {
  let length = 0;
  for (const part of parts) if (part.type === 'text') length += part.text.length;
  return length;
}

/**
 * Counts the long token texts of finished messages in the token worker before their rows are
 * built: not every one is an argument the schema boundary counted already (a tool call's
 * arguments are JSON, a streamed message's text grew through many small appends), and counting
 * a long one on the request thread would stall every other client.
 */
/** A live event's copy of its message (see `messageSnapshot`), when it is small enough to carry. */
function withSnapshot(row: Message): { message?: MessageSnapshot } {
  const message = messageSnapshot(row);
  return message ? { message } : {};
}

function precountFinished(messages: readonly (readonly StoredPart[])[]): Promise<void> {
  return precount(messages.flatMap((parts) => parts.flatMap(partTokenTexts)));
}
