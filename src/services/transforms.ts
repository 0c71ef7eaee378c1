import { uuidv7 } from '../db/ids.js';
import { asSql, type Tx } from '../db/sql.js';
import { appendEvents, type NewSessionEvent } from '../db/stores/events.js';
import * as sessionStore from '../db/stores/sessions.js';
import { findMessagesByIds, insertTransforms, readTransforms, type NewTransform } from '../db/stores/transforms.js';
import { checkString } from '../domain/input.js';
import { ownerOf } from '../domain/lineage.js';
import { LIMITS } from '../domain/limits.js';
import { countStoredTokens } from '../domain/tokens.js';
import { foldTransforms, REDACTED_TEXT, redactParts, type HistoryTransforms, type TransformKind } from '../domain/transforms.js';
import type { StoredPart } from '../domain/types.js';
import { badInput, notFound } from '../domain/errors.js';
import type { Message, Session } from '../generated/prisma/client.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
import type { LockedSession } from '../db/stores/sessions.js';
import type { SessionWrites } from './session-writes.js';
import type { TokenPrecount } from '../caches/token-precount.js';

/** Longest `reason` of hideMessages, in characters. */
export const HIDE_REASON_MAX = 1_000;

/** A message as seen in a session: the session whose view the flags describe. */
export type ViewedMessage = Message & { viewSessionId: string };

/** Client ids by internal id, for errors that name what the client sent. */
type ClientIds = ReadonlyMap<string, string>;

/**
 * History transforms (domain/transforms.ts): hide, unhide, redact, unredact, strip tool outputs.
 * Each write locks the session it is made in (so ordinals, and the replay order they define, are
 * serialized with appends, forks and compactions of that session on any number of instances),
 * checks every target is a message of that session's view (finished, for a redaction: hiding a
 * message still generating is allowed, and it stays hidden once finished), skips what would change
 * nothing, numbers the new transforms after the session's last, and appends its event in the same
 * transaction; the event is published after the commit. A refusal writes nothing.
 */
export class TransformService {
  constructor(
    private readonly sessions: SessionWrites,
    /** The app's token pre-count: a long replacement is counted in its worker. */
    private readonly precount: TokenPrecount,
  ) {}

  async hideMessages(
    workspaceId: string,
    input: { sessionId: string; messageIds: string[]; reason: string },
    clientIds: { session: string; messages: ClientIds },
  ): Promise<{ session: Session; messages: ViewedMessage[] }> {
    const reason = checkReason(input.reason);
    const ids = checkIds(input.messageIds);
    return this.sessions.write(async (tx, events) => {
      const session = await this.sessions.lock(tx, workspaceId, input.sessionId, clientIds.session);
      const messages = await visibleMessages(tx, session, ids, clientIds.messages);
      const current = await this.current(tx, session);
      const changed = messages.filter((m) => current.hidden.get(m.id)?.reason !== reason);
      const updated = await this.record(
        tx,
        session,
        changed.map((m) => ({ kind: 'HIDE', messageId: m.id, position: m.position, reason })),
        changed.length ? [{ type: 'MESSAGES_HIDDEN', payload: { messageIds: changed.map((m) => m.id), reason } }] : [],
        events,
      );
      return { session: updated, messages: messages.map((m) => ({ ...m, viewSessionId: session.id })) };
    });
  }

  async unhideMessages(
    workspaceId: string,
    input: { sessionId: string; messageIds: string[] },
    clientIds: { session: string; messages: ClientIds },
  ): Promise<{ session: Session; messages: ViewedMessage[] }> {
    const ids = checkIds(input.messageIds);
    return this.sessions.write(async (tx, events) => {
      const session = await this.sessions.lock(tx, workspaceId, input.sessionId, clientIds.session);
      const messages = await visibleMessages(tx, session, ids, clientIds.messages);
      const current = await this.current(tx, session);
      const changed = messages.filter((m) => current.hidden.has(m.id));
      const updated = await this.record(
        tx,
        session,
        changed.map((m) => ({ kind: 'UNHIDE', messageId: m.id, position: m.position })),
        changed.length ? [{ type: 'MESSAGES_UNHIDDEN', payload: { messageIds: changed.map((m) => m.id) } }] : [],
        events,
      );
      return { session: updated, messages: messages.map((m) => ({ ...m, viewSessionId: session.id })) };
    });
  }

  /**
   * Redacts a message in a session's view (by default the session that wrote it): from now on
   * assembly sends `replacement` instead of its content (`redactParts`), counted here once.
   */
  async redactMessage(
    workspaceId: string,
    input: { messageId: string; sessionId?: string | null; replacement?: string | null },
    clientIds: { message: string; session?: string | null },
  ): Promise<{ session: Session; message: ViewedMessage }> {
    const replacement = input.replacement ?? REDACTED_TEXT;
    if (!replacement.trim()) throw badInput('input.replacement must not be empty or blank; leave it out for "[redacted]".');
    // Long replacements were counted off the request thread at the schema boundary; this finds them counted.
    await this.precount.count([replacement]);
    return this.sessions.write(async (tx, events) => {
      const { session, message } = await this.target(tx, workspaceId, input, clientIds);
      if (message.generating) {
        throw badInput(`Message ${clientIds.message} is still generating; redact it once it is finished.`);
      }
      const tokens = countStoredTokens(redactParts(message.parts as unknown as StoredPart[], replacement), this.precount);
      const current = await this.current(tx, session);
      const unchanged = current.redacted.get(message.id)?.replacement === replacement;
      const updated = await this.record(
        tx,
        session,
        unchanged
          ? []
          : [
              {
                kind: 'REDACT',
                messageId: message.id,
                position: message.position,
                replacement,
                tokensO200k: tokens.O200K_BASE,
                tokensCl100k: tokens.CL100K_BASE,
              },
            ],
        unchanged ? [] : [{ type: 'MESSAGE_REDACTED', messageId: message.id, payload: { index: message.position } }],
        events,
      );
      return { session: updated, message: { ...message, viewSessionId: session.id } };
    });
  }

  /** Lifts a redaction in a session's view; a message not redacted there is left as it is. */
  async unredactMessage(
    workspaceId: string,
    input: { messageId: string; sessionId?: string | null },
    clientIds: { message: string; session?: string | null },
  ): Promise<{ session: Session; message: ViewedMessage }> {
    return this.sessions.write(async (tx, events) => {
      const { session, message } = await this.target(tx, workspaceId, input, clientIds);
      const current = await this.current(tx, session);
      const changed = current.redacted.has(message.id);
      const updated = await this.record(
        tx,
        session,
        changed ? [{ kind: 'UNREDACT', messageId: message.id, position: message.position }] : [],
        changed ? [{ type: 'MESSAGE_UNREDACTED', messageId: message.id, payload: { index: message.position } }] : [],
        events,
      );
      return { session: updated, message: { ...message, viewSessionId: session.id } };
    });
  }

  /** From now on, every tool result of the messages before `uptoIndex` is sent as a stub; a smaller index than one in force changes nothing. */
  async stripToolOutputs(workspaceId: string, input: { sessionId: string; uptoIndex: number }, clientId: string): Promise<Session> {
    return this.sessions.write(async (tx, events) => {
      const session = await this.sessions.lock(tx, workspaceId, input.sessionId, clientId);
      if (!Number.isInteger(input.uptoIndex) || input.uptoIndex < 1 || input.uptoIndex > session.messageCount) {
        throw badInput(`uptoIndex must be from 1 to ${session.messageCount} (the session's message count).`, {
          uptoIndex: input.uptoIndex,
        });
      }
      const current = await this.current(tx, session);
      const changed = input.uptoIndex > current.stripUpto;
      return this.record(
        tx,
        session,
        changed ? [{ kind: 'STRIP_TOOL_OUTPUTS', messageId: null, position: input.uptoIndex }] : [],
        changed ? [{ type: 'TOOL_OUTPUTS_STRIPPED', payload: { uptoIndex: input.uptoIndex } }] : [],
        events,
      );
    });
  }

  /** The transforms in force in the locked session's view. */
  private async current(tx: Tx, session: LockedSession): Promise<HistoryTransforms> {
    return foldTransforms(await readTransforms(tx, session));
  }

  /** The session and the message a redaction names: the message must be in that session's view. */
  private async target(
    tx: Tx,
    workspaceId: string,
    input: { messageId: string; sessionId?: string | null },
    clientIds: { message: string; session?: string | null },
  ): Promise<{ session: LockedSession; message: Message }> {
    let sessionId = input.sessionId ?? null;
    if (sessionId === null) {
      const [owner] = await findMessagesByIds(tx, [input.messageId], workspaceId);
      if (!owner) throw notFound('Message', clientIds.message);
      sessionId = owner.sessionId;
    }
    const session = await this.sessions.lock(tx, workspaceId, sessionId, clientIds.session ?? undefined);
    const [message] = await visibleMessages(tx, session, [input.messageId], new Map([[input.messageId, clientIds.message]]));
    return { session, message };
  }

  /** Numbers and inserts the transforms, counts them on the session and appends the events; no write when there is nothing to record. */
  private async record(
    tx: Tx,
    session: LockedSession,
    transforms: Array<Pick<NewTransform, 'messageId' | 'position'> & Partial<NewTransform> & { kind: TransformKind }>,
    newEvents: NewSessionEvent[],
    events: SessionEventMessage[],
  ): Promise<Session> {
    if (transforms.length === 0) {
      const [unchanged] = await sessionStore.findSessions(asSql(tx), session.workspaceId, [session.id]);
      return unchanged;
    }
    const createdAt = new Date();
    await insertTransforms(
      tx,
      transforms.map((t, i) => ({
        id: uuidv7(),
        sessionId: session.id,
        ordinal: session.transformCount + 1 + i,
        kind: t.kind,
        messageId: t.messageId,
        position: t.position,
        reason: t.reason ?? null,
        replacement: t.replacement ?? null,
        tokensO200k: t.tokensO200k ?? null,
        tokensCl100k: t.tokensCl100k ?? null,
        createdAt,
      })),
    );
    const updated = await sessionStore.updateSession(tx, session.id, { transformCount: session.transformCount + transforms.length });
    events.push(...(await appendEvents(tx, session.id, newEvents)));
    return updated;
  }
}

function checkReason(reason: string): string {
  checkString(reason, 'input.reason', HIDE_REASON_MAX);
  if (!reason.trim()) throw badInput('input.reason must not be empty or blank: say why the messages are hidden.');
  return reason;
}

function checkIds(ids: string[]): string[] {
  if (ids.length === 0) throw badInput('input.messageIds must not be empty.');
  if (ids.length > LIMITS.messagesPerCall) throw badInput(`input.messageIds: at most ${LIMITS.messagesPerCall} messages per call.`);
  return [...new Set(ids)];
}

/**
 * The messages, in index order, each one checked to be in the session's view (its own or
 * inherited before a cut); the first that is not is NOT_FOUND under the id the client sent.
 */
async function visibleMessages(tx: Tx, session: LockedSession, ids: string[], clientIds: ClientIds): Promise<Message[]> {
  const rows = await findMessagesByIds(tx, ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const id of ids) {
    const row = byId.get(id);
    if (!row || row.position >= session.messageCount || ownerOf(session, row.position) !== row.sessionId) {
      throw notFound('Message in this session', clientIds.get(id) ?? id);
    }
  }
  return [...byId.values()].sort((a, b) => a.position - b.position);
}
