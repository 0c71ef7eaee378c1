import { uuidv7 } from '../db/ids.js';
import { appendEvents } from '../db/stores/events.js';
import * as sessionStore from '../db/stores/sessions.js';
import { badInput, DomainError, notFound } from '../domain/errors.js';
import { forkTitleBase, nextForkTitle } from '../domain/fork-title.js';
import { toGlobalId } from '../domain/global-ids.js';
import { childLineage, clipSegments, ownerOf, visibleSegments } from '../domain/lineage.js';
import type { SqlClient } from '../db/sql.js';
import { readToolRoundTail } from '../db/stores/messages.js';
import { unansweredCallsBefore } from '../domain/tool-rounds.js';
import type { Message, Prisma, Session } from '../generated/prisma/client.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
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
  const byIndex = input.messageIndex !== undefined && input.messageIndex !== null;
  const byId = input.messageId !== undefined && input.messageId !== null;
  if (Number(byIndex) + Number(byId) + Number(byTimeline) !== 1) {
    throw badInput('forkSession: give exactly one of messageIndex, messageId and timelineIndex.');
  }
  if (byTimeline) {
    input = { ...input, messageIndex: await timelineForkIndex(writes, workspaceId, input.sessionId, input.timelineIndex!, clientId) };
  }
  const title = input.title === undefined || input.title === null ? null : checkTitle(input.title);
  const at: ForkCut['at'] = byId ? { messageId: input.messageId! } : { index: input.messageIndex! };
  // Plain SQL: four statements in one transaction, whatever the parent's length (see db/sql.ts).
  return writes.writeSql((sql, events) =>
    cutFork(writes, sql, events, workspaceId, { sessionId: input.sessionId, at, title, role: 'USER' }, clientId),
  );
}

/** Where `cutFork` cuts, and which role the message left out must have. */
export interface ForkCut {
  sessionId: string;
  at: { index: number } | { messageId: string };
  /** Checked (`checkTitle`); null for the "(fork N)" default. */
  title: string | null;
  /**
   * USER: a fork before a question (forkSession, editMessage). ASSISTANT: a fork before an answer
   * (regenerateMessage), refused while the answer is still generating or when the cut would leave
   * a tool call of the fork without its result.
   */
  role: 'USER' | 'ASSISTANT';
  /** How errors name the message (the client's opaque ID); default its raw id or index. */
  messageLabel?: string;
}

/**
 * The fork itself, in the caller's transaction (`sql`, plain SQL or a Prisma transaction seen as
 * one): locks the tree's root then the parent (so concurrent forks of one tree get distinct
 * "(fork N)"), checks the cut, inserts the fork and collects its SESSION_FORKED event.
 */
export async function cutFork(
  writes: SessionWrites,
  sql: SqlClient,
  events: SessionEventMessage[],
  workspaceId: string,
  cut: ForkCut,
  clientId?: string,
): Promise<{ session: Session; excludedMessage: Message }> {
  const root = await writes.lockTreeRoot(sql, workspaceId, cut.sessionId, clientId);
  const parent = root.id === cut.sessionId ? root : await writes.lock(sql, workspaceId, cut.sessionId, clientId);
  if ('index' in cut.at) {
    const index = cut.at.index;
    if (!Number.isInteger(index) || index < 0 || index >= parent.messageCount) {
      throw new DomainError(
        'FORK_INDEX_OUT_OF_RANGE',
        `messageIndex ${index} is outside this session's messages (valid: 0 to ${parent.messageCount - 1}).`,
        { messageIndex: index, messageCount: parent.messageCount },
      );
    }
  }
  const base = forkTitleBase(parent.title);
  const at = 'index' in cut.at ? { owner: ownerOf(parent, cut.at.index), index: cut.at.index } : cut.at;
  const point = await sessionStore.readForkPoint(sql, parent, at, base);
  if (!point || ownerOf(parent, point.message.position) !== point.message.sessionId) {
    throw notFound('Message in this session', cut.messageLabel ?? ('messageId' in cut.at ? cut.at.messageId : String(cut.at.index)));
  }
  const { message: excluded, generatingAt, highestFork } = point;
  const index = excluded.position;
  if (excluded.role !== cut.role) throw wrongRole(cut.role, index, excluded.role);
  if (generatingAt !== null) {
    throw badInput(`Message ${generatingAt} is still generating; fork at or before it, or wait until it is finished.`);
  }
  if (cut.role === 'ASSISTANT') {
    if (excluded.generating) throw badInput(`Message ${index} is still generating; finish it (updateMessage) before regenerating it.`);
    const open = unansweredCallsBefore(
      await readToolRoundTail(sql, clipSegments(visibleSegments(parent), Math.max(0, index - TOOL_ROUND_WINDOW), index)),
    );
    if (open.length > 0) {
      throw new DomainError(
        'FORK_POINT_IN_TOOL_ROUND',
        `Message ${index} sits inside a tool round: tool call "${open[0]}" made before it is answered only after it. Regenerate the answer that follows the round instead.`,
        { messageIndex: index, callIds: open },
      );
    }
  }
  const forkTitle = cut.title ?? nextForkTitle(base, highestFork === null ? null : BigInt(highestFork));
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
}

/** How far back a regenerate cut looks for a tool call still waiting for its result. */
const TOOL_ROUND_WINDOW = 64;

function wrongRole(expected: 'USER' | 'ASSISTANT', index: number, role: string): DomainError {
  if (expected === 'USER') {
    return new DomainError('FORK_POINT_NOT_USER_MESSAGE', `A fork is cut at a USER message; message ${index} is ${role}.`, {
      messageIndex: index,
      role,
    });
  }
  return new DomainError(
    'REGENERATE_NOT_ASSISTANT_MESSAGE',
    `Only an ASSISTANT message can be regenerated; message ${index} is ${role}${role === 'USER' ? ' (edit it with editMessage instead)' : ''}.`,
    { messageIndex: index, role },
  );
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
