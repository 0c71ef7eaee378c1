import { asSql } from '../db/sql.js';
import { findMessageOwner } from '../db/stores/messages.js';
import { notFound } from '../domain/errors.js';
import type { TextCaps } from '../domain/limits.js';
import { draftMessage, type PartInput } from '../domain/parts.js';
import type { Message, Session } from '../generated/prisma/client.js';
import { cutFork } from './forks.js';
import type { MessageAppends } from './message-appends.js';
import { checkTitle, readUploads } from './session-input.js';
import type { SessionWrites } from './session-writes.js';

/**
 * Which message to branch at, and the session to fork. The message id names the one session that
 * wrote it; a fork whose cut lies after it sees it too. Without `sessionId` that owning session is
 * forked; with it, the session the client is looking through (which must see the message), so the
 * new branch is that session's child and keeps its settings and metadata. Either way the branch
 * holds the same messages before the cut.
 */
export interface BranchTarget {
  messageId: string;
  sessionId?: string | null;
  title?: string | null;
  /** The client's opaque IDs, for error messages. */
  labels: { message: string; session?: string };
}

/** `editMessage`'s new version of the USER message: exactly one of text and parts, checked as an append's message is. */
export interface EditedContent {
  text?: string | null;
  parts?: PartInput[] | null;
}

async function forkedSession(writes: SessionWrites, workspaceId: string, target: BranchTarget): Promise<{ id: string; label?: string }> {
  if (target.sessionId !== undefined && target.sessionId !== null) return { id: target.sessionId, label: target.labels.session };
  const owner = await findMessageOwner(writes.sql.reads, workspaceId, target.messageId);
  if (!owner) throw notFound('Message', target.labels.message);
  return { id: owner };
}

const titleOf = (target: BranchTarget) => (target.title === undefined || target.title === null ? null : checkTitle(target.title));

/**
 * "Try another answer": a fork holding everything before an ASSISTANT message (so it ends on the
 * question it answered), with forkSession's titles, locks and cost. The new answer appended to it
 * becomes one of the message's alternatives.
 */
export async function regenerateMessage(
  writes: SessionWrites,
  workspaceId: string,
  target: BranchTarget,
): Promise<{ session: Session; excludedMessage: Message }> {
  const title = titleOf(target);
  const parent = await forkedSession(writes, workspaceId, target);
  return writes.writeSql((sql, events) =>
    cutFork(
      writes,
      sql,
      events,
      workspaceId,
      { sessionId: parent.id, at: { messageId: target.messageId }, title, role: 'ASSISTANT', messageLabel: target.labels.message },
      parent.label,
    ),
  );
}

/**
 * "Change my question": a fork before a USER message with the new version appended, in one
 * transaction (both or neither). The append is an append's: checked alike (attachments included)
 * before anything is locked, with its MESSAGE_ADDED event on the fork after the parent's
 * SESSION_FORKED.
 */
export async function editMessage(
  writes: SessionWrites,
  appends: MessageAppends,
  caps: TextCaps,
  workspaceId: string,
  target: BranchTarget,
  content: EditedContent,
): Promise<{ session: Session; message: Message; excludedMessage: Message }> {
  const title = titleOf(target);
  const [input] = await readUploads([{ role: 'USER', text: content.text, parts: content.parts }], caps, () => 'input');
  const draft = draftMessage(input, 'input', caps);
  const parent = await forkedSession(writes, workspaceId, target);
  return writes.write(async (tx, events) => {
    const { session: fork, excludedMessage } = await cutFork(
      writes,
      asSql(tx),
      events,
      workspaceId,
      { sessionId: parent.id, at: { messageId: target.messageId }, title, role: 'USER', messageLabel: target.labels.message },
      parent.label,
    );
    const { session, messages } = await appends.insert(tx, fork, [draft], { turnId: null, agentId: null }, events);
    return { session, message: messages[0], excludedMessage };
  });
}
