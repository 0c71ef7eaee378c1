import { uuidv7 } from '../db/ids.js';
import { asSql, type Sql } from '../db/sql.js';
import { blobsOfSessions, sweepBlobs } from '../db/stores/attachments.js';
import { createCompaction, latestCompaction } from '../db/stores/compactions.js';
import { appendEvents, appendSubSessionWrappers, MAX_SUB_SESSION_DEPTH } from '../db/stores/events.js';
import { findGenerating } from '../db/stores/messages.js';
import * as sessionStore from '../db/stores/sessions.js';
import { lockNestedSubSessions, subSessionDepth } from '../db/stores/sub-sessions.js';
import { turnStatusIn } from '../db/stores/turns.js';
import { badInput, DomainError, notFound } from '../domain/errors.js';
import { clipSegments, visibleSegments } from '../domain/lineage.js';
import type { MessageInputData } from '../domain/parts.js';
import type { TextCaps } from '../domain/limits.js';
import type { Timeline } from '../domain/timeline.js';
import { countTokens } from '../domain/tokens.js';
import type { TokenPrecount } from '../caches/token-precount.js';
import { requiredKey, turnNotActive } from '../domain/turns.js';
import type { Compaction, Message, Prisma, PrismaClient, Session } from '../generated/prisma/client.js';
import type { EventBus } from '../pubsub/bus.js';
import type { AssemblyCaches } from '../caches/index.js';
import { sessionDeletedEvent } from './event-stream.js';
import { type BranchTarget, type EditedContent, editMessage, regenerateMessage } from './branches.js';
import { type ForkInput, forkSession } from './forks.js';
import { type AppendedMessages, MessageAppends } from './message-appends.js';
import { type MessageUpdate, updateMessage } from './message-updates.js';
import { checkTitle, draftBatch, jsonObject, readUploads } from './session-input.js';
import { SessionWrites } from './session-writes.js';
import { readTimeline } from './timeline.js';

export const DEFAULT_TITLE = 'Untitled session';

/**
 * Writes to sessions and their messages, each in the frame of `SessionWrites` (lock the session
 * rows it changes, write through the stores, publish after the commit): creating, updating and
 * deleting sessions and compacting them here; appends (message-appends.ts), message updates
 * (message-updates.ts) and forks (forks.ts) in their own modules.
 */
export class SessionService extends SessionWrites {
  private readonly appends: MessageAppends;

  constructor(
    prisma: PrismaClient,
    sql: Sql,
    bus: EventBus,
    private readonly caches: Pick<AssemblyCaches, 'forget'>,
    /** The backend's caps (`AppRuntime.caps`): what a message's text may grow to. */
    private readonly caps: TextCaps,
    /** The app's token pre-count (long texts counted off the request thread), read when counting. */
    private readonly precount: TokenPrecount,
  ) {
    super(prisma, sql, bus);
    this.appends = new MessageAppends(this, caps, precount);
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
    const drafts = draftBatch(await readUploads(input.messages ?? [], this.caps), true, this.caps);
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
        const depth = await subSessionDepth(tx, parent.id, MAX_SUB_SESSION_DEPTH);
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
      return (await this.appends.insert(tx, created, drafts, { turnId: null, agentId: agentId }, events)).session;
    });
  }

  /** The timeline of a session (see timeline.ts). */
  timeline(sessionId: string): Promise<Timeline> {
    return readTimeline(this.sql, sessionId);
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
    let blobs: string[] = [];
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
      const nested = await lockNestedSubSessions(tx, ids);
      // A sub-session deleted on its own: the sessions above it keep its SessionDeleted, wrapped.
      const head = await sessionStore.readEventHead(tx, sessionId);
      if (head?.parentTurnId) {
        events.push(...(await appendSubSessionWrappers(tx, sessionId, [sessionDeletedEvent(sessionId, head.eventSequence)])));
      }
      const all = [...nested.map((n) => n.id), ...ids];
      blobs = await blobsOfSessions(asSql(tx), all);
      const deleted = await sessionStore.deleteSessions(tx, all);
      events.push(...deleted.map((row) => sessionDeletedEvent(row.id, row.eventSequence)));
      return all;
    });
    for (const id of ids) this.caches.forget(id);
    // Bytes no other attachment of the workspace holds go with them. A sweep that fails (an append
    // took one of them meanwhile: the foreign key refuses; or the database is away) keeps the bytes,
    // which is never a loss: the sessions are deleted either way.
    await sweepBlobs(this.sql, workspaceId, blobs).catch(() => 0);
    return ids;
  }

  /** Appends messages to a session (see message-appends.ts). */
  appendMessages(...call: Parameters<MessageAppends['append']>): Promise<AppendedMessages> {
    return this.appends.append(...call);
  }

  /** Changes a message that is still generating; a finished message never changes (see message-updates.ts). */
  updateMessage(workspaceId: string, messageId: string, input: MessageUpdate, clientId?: string): Promise<Message> {
    return updateMessage(this, this.caps, this.precount, workspaceId, messageId, input, clientId);
  }

  /** Forks a session at a USER message (see forks.ts). */
  forkSession(workspaceId: string, input: ForkInput, clientId?: string): Promise<{ session: Session; excludedMessage: Message }> {
    return forkSession(this, workspaceId, input, clientId);
  }

  /** A fork before an ASSISTANT message, for a new answer (see branches.ts). */
  regenerateMessage(workspaceId: string, target: BranchTarget): ReturnType<typeof regenerateMessage> {
    return regenerateMessage(this, workspaceId, target);
  }

  /** A fork before a USER message with its new version appended, in one transaction (see branches.ts). */
  editMessage(workspaceId: string, target: BranchTarget, content: EditedContent): ReturnType<typeof editMessage> {
    return editMessage(this, this.appends, this.caps, workspaceId, target, content);
  }

  /** The compaction assembly applies to `session`: its own latest, else the latest it inherits (see db/stores/compactions.ts). */
  applicableCompaction(session: Pick<Session, 'id' | 'lineage'>): Promise<Compaction | null> {
    return latestCompaction(this.sql, session);
  }

  /** Records a summary (and structured context) that replaces messages [0, uptoIndex) in assembled contexts from now on. */
  async compactSession(
    workspaceId: string,
    input: { sessionId: string; uptoIndex: number; summary: string; extractedContext?: unknown },
    clientId?: string,
  ): Promise<Session> {
    if (!input.summary.trim()) throw badInput('compactSession: summary must not be empty.');
    // Bounded like every JSON argument (depth, size: schema/validate-args.ts); an object, so the section reads as named facts.
    const extractedContext =
      input.extractedContext === undefined || input.extractedContext === null
        ? undefined
        : jsonObject(input.extractedContext, 'extractedContext');
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
        extractedContext,
        tokensO200k: countTokens(input.summary, 'O200K_BASE', this.precount),
        tokensCl100k: countTokens(input.summary, 'CL100K_BASE', this.precount),
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
