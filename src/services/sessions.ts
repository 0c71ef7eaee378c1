import { createHash } from 'node:crypto';
import { uuidv7 } from '../db/ids.js';
import { asSql, isRetryableSqlError, type Sql, type SqlClient, type SqlTarget, type Tx } from '../db/sql.js';
import { createAttachment } from '../db/stores/attachments.js';
import { createCompaction } from '../db/stores/compactions.js';
import { appendEvents } from '../db/stores/events.js';
import {
  findGenerating,
  findMessageSession,
  findToolCalls,
  insertMessages,
  lockMessage,
  newMessageRow,
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
} from '../domain/parts.js';
import { countTokens, partTokenText } from '../domain/tokens.js';
import { precount } from '../domain/token-precount.js';
import type { StoredPart } from '../domain/types.js';
import { badInput, DomainError, notFound } from '../errors.js';
import { Prisma, type Message, type PrismaClient, type Session } from '../generated/prisma/client.js';
import type { EventBus, SessionEventMessage } from '../pubsub.js';
import type { AssemblyCaches } from '../caches/index.js';
import { sessionDeletedEvent, writeThenPublish } from './event-log.js';
import { touchIfActive, turnStatusIn } from '../db/stores/turns.js';
import { turnNotActive } from '../domain/turns.js';

export type { LockedSession } from '../db/stores/sessions.js';

export const DEFAULT_TITLE = 'Untitled session';
const RECENT_WINDOW = 64;

/**
 * Writes to sessions and their messages. Every write locks the session row it changes
 * (`SELECT … FOR UPDATE`), so appends, forks and compactions of one session are serialized on one
 * server or many, and publishes its events only after the transaction commits.
 */
export class SessionService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: Sql,
    private readonly bus: EventBus,
    private readonly caches: Pick<AssemblyCaches, 'forget'>,
  ) {}

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
    input: { title?: string | null; settings?: unknown; metadata?: unknown; messages?: MessageInputData[] | null },
  ): Promise<Session> {
    const title = checkTitle(input.title ?? DEFAULT_TITLE);
    const settings = jsonObject(input.settings ?? {}, 'settings');
    const metadata = jsonObject(input.metadata ?? {}, 'metadata');
    const drafts = draftBatch(input.messages ?? [], true);
    const id = uuidv7();
    return this.write(async (tx, events) => {
      const created = await sessionStore.createSession(tx, { id, rootId: id, ancestorIds: [], workspaceId, title, settings, metadata });
      if (drafts.length === 0) return created;
      // Nobody else sees the new row before the commit: no lock to take.
      return (await this.insertMessages(tx, created, drafts, { turnId: null, agentId: null }, events)).session;
    });
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
      const deleted = await sessionStore.deleteSessions(tx, ids);
      events.push(...deleted.map((row) => sessionDeletedEvent(row.id, row.eventSequence)));
      return ids;
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
    const drafts = draftBatch(inputs, false);
    if (options.agentId !== null && !options.agentId.trim()) throw badInput('agentId must not be empty.');
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
    const now = Date.now();
    const stored: StoredPart[][] = [];
    for (const draft of drafts) stored.push(await this.storeAttachments(tx, session, draft.parts));
    await precountFinished(stored.filter((_, i) => !drafts[i].generating));
    const rows: Message[] = [];
    for (const [i, draft] of drafts.entries()) {
      const parts = stored[i];
      rows.push(
        newMessageRow({
          id: uuidv7(),
          sessionId: session.id,
          position: session.messageCount + i,
          role: draft.role,
          parts,
          generating: draft.generating,
          turnId: options.turnId,
          agentId: draft.agentId ?? options.agentId,
          // Strictly increasing timestamps within a batch keep createdAt order equal to index order.
          createdAt: new Date(now + i),
        }),
      );
    }
    await insertMessages(tx, rows);
    const updated = await sessionStore.updateSession(tx, session.id, { messageCount: session.messageCount + rows.length });
    events.push(
      ...(await appendEvents(
        tx,
        session.id,
        rows.map((row) => ({
          type: 'MESSAGE_ADDED',
          messageId: row.id,
          turnId: row.turnId,
          payload: { index: row.position, role: row.role, generating: row.generating },
          message: row,
        })),
      )),
    );
    return { session: updated, messages: rows };
  }

  /** A tool result must name a call made earlier in the session (or earlier in the same batch). */
  private async checkToolResults(tx: Tx, session: LockedSession, batches: DraftPart[][]) {
    const seen = new Set<string>();
    const missing = new Set<string>();
    for (const parts of batches) {
      for (const id of toolResultIdsOf(parts)) if (!seen.has(id)) missing.add(id);
      for (const id of toolCallIdsOf(parts)) seen.add(id);
    }
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
    return this.write(async (tx, events) => {
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
        const draft = draftMessage({ role: message.role, parts: input.parts! }, 'parts');
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
      if (hasAppend && joinedLength(parts) > LIMITS.stringLength) {
        throw badInput(`appendText: the message's text would be longer than ${LIMITS.stringLength} characters; continue in a new message.`);
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
  }

  /**
   * Forks `sessionId` at `messageIndex`: the fork sees the parent's messages [0, messageIndex) by
   * reference (no row is copied, so the cost does not grow with the parent's length), carries its
   * settings and metadata, and leaves out the USER message at the cut, which is returned.
   */
  async forkSession(
    workspaceId: string,
    input: { sessionId: string; messageIndex?: number | null; messageId?: string | null; title?: string | null },
    clientId?: string,
  ): Promise<{ session: Session; excludedMessage: Message }> {
    const byIndex = input.messageIndex !== undefined && input.messageIndex !== null;
    const byId = input.messageId !== undefined && input.messageId !== null;
    if (byIndex === byId) throw badInput('forkSession: give exactly one of messageIndex and messageId.');
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

function draftBatch(inputs: MessageInputData[], allowEmpty: boolean): DraftMessage[] {
  if (!allowEmpty && inputs.length === 0) throw badInput('messages must not be empty.');
  if (inputs.length > LIMITS.messagesPerCall) throw badInput(`At most ${LIMITS.messagesPerCall} messages per call.`);
  return inputs.map((input, i) => draftMessage(input, `messages[${i}]`));
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
function precountFinished(messages: readonly (readonly StoredPart[])[]): Promise<void> {
  return precount(messages.flatMap((parts) => parts.map(partTokenText)));
}
