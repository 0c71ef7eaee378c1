import { uuidv7 } from '../db/ids.js';
import { appendEvents } from '../db/stores/events.js';
import * as sessionStore from '../db/stores/sessions.js';
import { badInput, DomainError, notFound } from '../domain/errors.js';
import { forkTitleBase, nextForkTitle } from '../domain/fork-title.js';
import { toGlobalId } from '../domain/global-ids.js';
import { childLineage, ownerOf } from '../domain/lineage.js';
import type { Message, Prisma, Session } from '../generated/prisma/client.js';
import { checkTitle } from './session-input.js';
import type { SessionWrites } from './session-writes.js';
import { readTimeline } from './timeline.js';

/** Where to fork: the session, exactly one of its message index, message id and timeline index, and an optional title. */
export interface ForkInput {
  sessionId: string;
  messageIndex?: number | null;
  messageId?: string | null;
  timelineIndex?: number | null;
  title?: string | null;
}

/**
 * Forks `sessionId` at `messageIndex`: the fork sees the parent's messages [0, messageIndex) by
 * reference (no row is copied, so the cost does not grow with the parent's length), carries its
 * settings and metadata, and leaves out the USER message at the cut, which is returned.
 */
export async function forkSession(
  writes: SessionWrites,
  workspaceId: string,
  input: ForkInput,
  clientId?: string,
): Promise<{ session: Session; excludedMessage: Message }> {
  const byTimeline = input.timelineIndex !== undefined && input.timelineIndex !== null;
  let byIndex = input.messageIndex !== undefined && input.messageIndex !== null;
  const byId = input.messageId !== undefined && input.messageId !== null;
  if (Number(byIndex) + Number(byId) + Number(byTimeline) !== 1) {
    throw badInput('forkSession: give exactly one of messageIndex, messageId and timelineIndex.');
  }
  if (byTimeline) {
    input = { ...input, messageIndex: await timelineForkIndex(writes, workspaceId, input.sessionId, input.timelineIndex!, clientId) };
    byIndex = true;
  }
  const title = input.title === undefined || input.title === null ? null : checkTitle(input.title);
  // Plain SQL: four statements in one transaction, whatever the parent's length (see db/sql.ts).
  return writes.writeSql(async (sql, events) => {
    const root = await writes.lockTreeRoot(sql, workspaceId, input.sessionId, clientId);
    const parent = root.id === input.sessionId ? root : await writes.lock(sql, workspaceId, input.sessionId, clientId);
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
async function timelineForkIndex(
  writes: SessionWrites,
  workspaceId: string,
  sessionId: string,
  timelineIndex: number,
  clientId?: string,
): Promise<number> {
  if (!(await sessionStore.sessionInWorkspace(writes.sql.reads, workspaceId, sessionId))) throw notFound('Session', clientId ?? sessionId);
  const timeline = await readTimeline(writes.sql, sessionId);
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
