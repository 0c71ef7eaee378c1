/**
 * A session event as it leaves the database for live delivery, and the copy of its message it may
 * carry: the shapes the stores write and the event bus carries (below both, so neither imports the other).
 */
import { joinText, partsChars } from '../domain/parts.js';
import type { StoredPart } from '../domain/types.js';
import type { Message } from '../generated/prisma/client.js';

/** A session event as it travels over pub/sub: plain JSON, dates as ISO strings. */
export interface SessionEventMessage {
  id: string;
  sessionId: string;
  sequence: number;
  type: string;
  turnId: string | null;
  messageId: string | null;
  payload: unknown;
  createdAt: string;
  /**
   * The event's message (`messageId`) as the write left it, carried by live events only (never
   * stored in the log) and only when small (`messageSnapshot`): every
   * instance answers `message` from it instead of reading the row once per event.
   */
  message?: MessageSnapshot;
  /** The publishing instance's mark, on an event that came through Redis (see `createRedisBus`); nothing reads it. */
  origin?: string;
}

/**
 * A message row as live events carry it over pub/sub (JSON: dates as ISO strings; `text` left out,
 * it is the parts' text joined). Only messages whose parts hold up to `SNAPSHOT_MAX_CHARS`
 * characters of strings (text, tool results, tool-call arguments) travel this way: a larger one (or
 * a long streamed one, sent again with every update) is read from the database by whoever needs it,
 * as every replayed event's message is.
 */
export type MessageSnapshot = Omit<Message, 'text' | 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string };
export const SNAPSHOT_MAX_CHARS = 16 * 1024;

/** The snapshot of `row` for a live event, or undefined when it is too large to carry. */
export function messageSnapshot(row: Message): MessageSnapshot | undefined {
  if (row.text.length > SNAPSHOT_MAX_CHARS || partsChars(row.parts as unknown as StoredPart[]) > SNAPSHOT_MAX_CHARS) return undefined;
  const { text: _text, createdAt, updatedAt, ...rest } = row;
  return { ...rest, createdAt: new Date(createdAt).toISOString(), updatedAt: new Date(updatedAt).toISOString() };
}

/** The row a snapshot was made of (the same object for every caller of one event: do not mutate). */
export function messageFromSnapshot(snapshot: MessageSnapshot): Message {
  return {
    ...snapshot,
    text: joinText(snapshot.parts as unknown as StoredPart[]),
    createdAt: new Date(snapshot.createdAt),
    updatedAt: new Date(snapshot.updatedAt),
  };
}
