/**
 * Every write to the `SessionEvent` log. The sequence counter lives on the session row, so numbers
 * are gapless per session even across server instances.
 */
import type { SessionEvent, SessionEventType } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../../pubsub.js';
import { uuidv7 } from '../ids.js';
import { asSql, type SqlTarget } from '../sql.js';
import { DEFAULT, type InsertValues } from './columns.js';

export interface NewSessionEvent {
  type: SessionEventType;
  turnId?: string | null;
  messageId?: string | null;
  payload?: Record<string, unknown>;
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
const written = Object.entries(EVENT_INSERT).filter((entry): entry is [string, string] => entry[1] !== DEFAULT);
const APPEND_SQL = `WITH numbered AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + $2::int WHERE id = $1
       RETURNING "eventSequence" - $2::int AS base
     )
     INSERT INTO "SessionEvent" (${written.map(([c]) => `"${c}"`).join(', ')})
     SELECT ${written.map(([, v]) => v).join(', ')}
     FROM numbered, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       WITH ORDINALITY AS e(id, type, turn_id, message_id, payload, ord)
     RETURNING id, sequence`;

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
  return events.map((event, i) => ({
    id: ids[i],
    sessionId,
    sequence: sequenceOf.get(ids[i])!,
    type: event.type,
    turnId: event.turnId ?? null,
    messageId: event.messageId ?? null,
    payload: event.payload ?? {},
    createdAt: createdAt.toISOString(),
  }));
}

/** For the store-columns test: which columns this INSERT writes or leaves to their default. */
export const EVENT_INSERT_COLUMNS = Object.keys(EVENT_INSERT);
