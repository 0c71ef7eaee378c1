import { uuidv7 } from '../db/ids.js';
import { asSql } from '../db/sql.js';
import { appendTextRow } from '../db/stores/append.js';
import { foldMessageEvents } from '../db/stores/event-folds.js';
import { appendEvents } from '../db/stores/events.js';
import { findMessageSession, lockMessage, updateMessageContent } from '../db/stores/messages.js';
import { touchIfActive } from '../db/stores/turns.js';
import { badInput, DomainError, notFound } from '../domain/errors.js';
import { draftMessage, type PartInput } from '../domain/parts.js';
import { readUploads } from './session-input.js';
import type { TextCaps } from '../domain/limits.js';
import type { StoredPart } from '../domain/types.js';
import type { Message } from '../generated/prisma/client.js';
import { checkToolResults, precountFinished, storeAttachments, withSnapshot } from './message-appends.js';
import type { SessionWrites } from './session-writes.js';
import type { TokenPrecount } from '../caches/token-precount.js';

/** What `updateMessage` changes: text appended, or the parts replaced, and whether it is still generating. */
export interface MessageUpdate {
  appendText?: string | null;
  parts?: PartInput[] | null;
  generating?: boolean | null;
}

/** Changes a message that is still generating; a finished message never changes. */
export async function updateMessage(
  writes: SessionWrites,
  caps: TextCaps,
  precount: TokenPrecount,
  workspaceId: string,
  messageId: string,
  input: MessageUpdate,
  clientId?: string,
): Promise<Message> {
  const hasAppend = input.appendText !== undefined && input.appendText !== null;
  const hasParts = input.parts !== undefined && input.parts !== null;
  if (hasParts) {
    const [read] = await readUploads([{ role: 'USER', parts: input.parts }], caps, () => 'parts');
    input = { ...input, parts: read.parts };
  }
  if (hasAppend && hasParts) throw badInput('updateMessage: give `appendText` or `parts`, not both.');
  if (!hasAppend && !hasParts && (input.generating === undefined || input.generating === null)) {
    throw badInput('updateMessage: nothing to change; give appendText, parts or generating.');
  }
  if (hasAppend && !hasParts && (input.generating ?? true)) {
    // Streaming: one statement (see db/stores/append.ts). When it does not decide (unknown,
    // finished or TOOL message, text near the cap), it writes nothing and the general path below
    // answers with the exact reason.
    const appendText = input.appendText!;
    const streamed = await writes.retrying(async (events) => {
      const now = new Date();
      const eventId = uuidv7();
      const done = await appendTextRow(writes.sql, workspaceId, messageId, appendText, eventId, now, caps.stringLength);
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
    if (streamed) return rewrote(writes, streamed);
  }
  const updated = await writes.write(async (tx, events) => {
    const found = await findMessageSession(tx, workspaceId, messageId);
    if (!found) throw notFound('Message', clientId ?? messageId);
    const session = await writes.lock(tx, workspaceId, found.sessionId);
    const message = await lockMessage(tx, messageId);
    if (!message.generating) {
      throw new DomainError('MESSAGE_IMMUTABLE', 'This message is finished and can no longer change.', {
        messageId: clientId ?? messageId,
      });
    }
    let parts = message.parts as unknown as StoredPart[];
    if (hasParts) {
      const draft = draftMessage({ role: message.role, parts: input.parts! }, 'parts', caps);
      await checkToolResults(tx, { ...session, messageCount: message.position }, [draft.parts]);
      parts = await storeAttachments(tx, session, draft.parts);
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
    if (hasAppend && joinedLength(parts) > caps.stringLength) {
      throw badInput(`appendText: the message's text would be longer than ${caps.stringLength} characters; continue in a new message.`);
    }
    if (!generating) await precountFinished(precount, [parts]);
    const updated = await updateMessageContent(tx, messageId, parts, generating, precount);
    const payload: Record<string, unknown> = { index: message.position, generating };
    if (hasAppend) payload.appendText = input.appendText;
    events.push(
      ...(await appendEvents(tx, session.id, [{ type: 'MESSAGE_UPDATED', messageId, turnId: message.turnId, payload, message: updated }])),
    );
    // Finished: its updates, this last one included, become one row per log (db/stores/event-folds.ts).
    if (!generating) await foldMessageEvents(tx, messageId);
    return updated;
  });
  return rewrote(writes, updated);
}

/**
 * Tells the database that `message` was rewritten: the new version holds its whole text twice
 * (text and parts), and the old one is now dead (PGlite reclaims it only when asked: db/sql.ts).
 */
function rewrote(writes: SessionWrites, message: Message): Message {
  writes.sql.rewroteMessageText?.(2 * message.text.length);
  return message;
}

/** Characters of a message's text parts together. */
function joinedLength(parts: readonly StoredPart[]): number {
  let length = 0;
  for (const part of parts) if (part.type === 'text') length += part.text.length;
  return length;
}
