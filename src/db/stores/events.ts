/**
 * Every statement on the `SessionEvent` log: the append, and the reads that replay and gap-fill
 * live streams. The sequence counter lives on the session row, so numbers are gapless per session
 * even across server instances.
 */
import type { Message, PrismaClient, SessionEvent, SessionEventType } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../../pubsub.js';
import { uuidv7 } from '../ids.js';
import { asSql, type SqlTarget } from '../sql.js';
import { messageSnapshot } from './messages.js';
import { insertSelectSql, type ColumnSet, type InsertValues } from './columns.js';

export interface NewSessionEvent {
  type: SessionEventType;
  turnId?: string | null;
  messageId?: string | null;
  payload?: Record<string, unknown>;
  /** The message row as this write leaves it: published with the event (when small), never stored. */
  message?: Message;
}

/**
 * The INSERT's value per column, over the `numbered` CTE and the unnest of the parameters: every
 * column of `SessionEvent` is written, so a new one is a type error here.
 */
const EVENT_INSERT: InsertValues<SessionEvent> = {
  id: 'e.id',
  sessionId: '$1',
  sequence: 'numbered.base + e.ord',
  type: 'e.type::"SessionEventType"',
  turnId: 'e.turn_id',
  messageId: 'e.message_id',
  payload: 'e.payload::jsonb',
  createdAt: '$3::timestamp(3)',
};
const APPEND_SQL = `WITH numbered AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + $2::int WHERE id = $1
       RETURNING "eventSequence" - $2::int AS base
     )
     ${insertSelectSql(
       { table: 'SessionEvent', values: EVENT_INSERT },
       `FROM numbered, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       WITH ORDINALITY AS e(id, type, turn_id, message_id, payload, ord)
     RETURNING id, sequence`,
     )}`;

/**
 * Appends events to a session's log inside the caller's transaction, in one statement (the next
 * sequence numbers are taken from the session row). Returns the events to publish once the
 * transaction has committed.
 */
export async function appendEvents(db: SqlTarget, sessionId: string, events: NewSessionEvent[]): Promise<SessionEventMessage[]> {
  if (events.length === 0) return [];
  const createdAt = new Date();
  const ids = events.map(() => uuidv7());
  const rows = await asSql(db).query<{ id: string; sequence: number }>(APPEND_SQL, [
    sessionId,
    events.length,
    createdAt.toISOString(),
    ids,
    events.map((e) => e.type),
    events.map((e) => e.turnId ?? null),
    events.map((e) => e.messageId ?? null),
    events.map((e) => JSON.stringify(e.payload ?? {})),
  ]);
  const sequenceOf = new Map(rows.map((row) => [row.id, Number(row.sequence)]));
  return events.map((event, i) => {
    const published: SessionEventMessage = {
      id: ids[i],
      sessionId,
      sequence: sequenceOf.get(ids[i])!,
      type: event.type,
      turnId: event.turnId ?? null,
      messageId: event.messageId ?? null,
      payload: event.payload ?? {},
      createdAt: createdAt.toISOString(),
    };
    const snapshot = event.message && event.message.id === published.messageId ? messageSnapshot(event.message) : undefined;
    if (snapshot) published.message = snapshot;
    return published;
  });
}

/** For the store-columns test: which columns this INSERT writes or leaves to their default. */
export const EVENT_INSERT_COLUMNS = Object.keys(EVENT_INSERT);

/** Every column of an event row, for the log reads: a column added to `SessionEvent` is a type error here. */
export const EVENT_COLUMNS: ColumnSet<SessionEvent> = {
  id: true,
  sessionId: true,
  sequence: true,
  type: true,
  turnId: true,
  messageId: true,
  payload: true,
  createdAt: true,
};

/** A stored event as streams hand it out (the shape it is published in). */
function toMessage(row: SessionEvent): SessionEventMessage {
  return {
    id: row.id,
    sessionId: row.sessionId,
    sequence: row.sequence,
    type: row.type,
    turnId: row.turnId,
    messageId: row.messageId,
    payload: row.payload,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Stored events of a session with `after < sequence <= upTo` (to the end when `upTo` is null), oldest first, at most `limit`. */
export async function readEventsAfter(
  prisma: PrismaClient,
  sessionId: string,
  after: number,
  upTo: number | null,
  limit: number,
): Promise<SessionEventMessage[]> {
  const rows = await prisma.sessionEvent.findMany({
    where: { sessionId, sequence: upTo === null ? { gt: after } : { gt: after, lte: upTo } },
    orderBy: { sequence: 'asc' },
    take: limit,
    select: EVENT_COLUMNS,
  });
  return rows.map(toMessage);
}

/** The sequence of a session's latest event (its counter), or null when the session does not exist (any more). */
export async function currentEventSequence(prisma: PrismaClient, sessionId: string): Promise<number | null> {
  const session = await prisma.session.findUnique({ where: { id: sessionId }, select: { eventSequence: true } });
  return session ? session.eventSequence : null;
}
