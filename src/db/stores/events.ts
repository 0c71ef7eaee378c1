/**
 * Every statement on the `SessionEvent` log: the append, and the reads that replay and gap-fill
 * live streams. The sequence counter lives on the session row, so numbers are gapless per session
 * even across server instances.
 */
import type { Message, SessionEvent, SessionEventType } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../session-events.js';
import { uuidv7 } from '../ids.js';
import { asSql, type SqlClient, type SqlTarget } from '../sql.js';
import { messageSnapshot } from '../session-events.js';
import { columnList, DEFAULT, insertSelectSql, type ColumnSet, type InsertValues } from './columns.js';
import { expandEventRows, UUIDV7_SQL } from './event-folds.js';

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
  lastSequence: DEFAULT,
};
const APPEND_SQL = `WITH numbered AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + $2::int WHERE id = $1
       RETURNING "eventSequence" - $2::int AS base, "parentTurnId"
     ), inserted AS (
     ${insertSelectSql(
       { table: 'SessionEvent', values: EVENT_INSERT },
       `FROM numbered, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       WITH ORDINALITY AS e(id, type, turn_id, message_id, payload, ord)
     RETURNING id, sequence`,
     )}
     )
     SELECT inserted.id, inserted.sequence, numbered."parentTurnId" FROM inserted, numbered`;

/** Sub-sessions nest at most this deep (a sub-session of a sub-session … of a root). */
export const MAX_SUB_SESSION_DEPTH = 16;

/**
 * The SUB_SESSION_EVENT wrapper written into the log of every session above a sub-session (its
 * parent turn's session, that one's parent turn's session, …), one per inner event. Values name the
 * CTEs of `subSessionWrapperCtes`: `b` is an enclosing session with its next base sequence and the
 * turn of it the sub-session runs in, `w` an inner event (`body` as JSON, `ord` 1, 2, 3 …).
 */
const WRAPPER_INSERT: InsertValues<SessionEvent> = {
  id: UUIDV7_SQL,
  sessionId: 'b.id',
  sequence: 'b.base + w.ord',
  type: `'SUB_SESSION_EVENT'`,
  turnId: 'b.turn_id',
  // The inner event's message: the fold at its finish finds the wrappers by it (`foldMessageEvents`).
  messageId: `w.body->>'messageId'`,
  payload: `jsonb_build_object('subSessionId', (SELECT id FROM wsub), 'event', w.body)`,
  createdAt: 'w.created_at',
  lastSequence: DEFAULT,
};

/**
 * CTEs (for a `WITH RECURSIVE` statement) that copy inner events of a sub-session into the logs of
 * the sessions above it, in the same statement as whatever wrote them: `subSession` is an SQL
 * expression for the sub-session's id (nothing is written when it is null or not a sub-session),
 * `count` the number of inner events, `innerRows` a FROM item with columns `body` (jsonb), `ord`
 * (1…count) and `created_at`. The enclosing sessions are locked nearest first (a child's row is
 * always taken before its parent's), their counters moved by `count`, and the wrappers inserted
 * into CTE `wrapped` (id, sessionId, sequence, turnId, payload, createdAt).
 */
export function subSessionWrapperCtes(subSession: string, count: string, innerRows: string): string {
  return `wsub AS (SELECT ${subSession}::text AS id),
     wchain(id, turn_id, depth) AS (
       SELECT pt."sessionId", pt.id, 1 FROM "Session" cs JOIN "Turn" pt ON pt.id = cs."parentTurnId" WHERE cs.id = (SELECT id FROM wsub)
       UNION ALL
       SELECT pt."sessionId", pt.id, c.depth + 1 FROM wchain c JOIN "Session" cs ON cs.id = c.id JOIN "Turn" pt ON pt.id = cs."parentTurnId"
       WHERE c.depth < ${MAX_SUB_SESSION_DEPTH + 1}
     ), wlocked AS (
       SELECT s.id FROM "Session" s JOIN wchain c ON c.id = s.id ORDER BY c.depth FOR UPDATE OF s
     ), wbumped AS (
       UPDATE "Session" s SET "eventSequence" = s."eventSequence" + ${count}
       FROM wchain c WHERE c.id = s.id AND s.id IN (SELECT id FROM wlocked)
       RETURNING s.id, s."eventSequence" - ${count} AS base, c.turn_id
     ), wrapped AS (
       ${insertSelectSql(
         { table: 'SessionEvent', values: WRAPPER_INSERT },
         `FROM wbumped b, ${innerRows}
       RETURNING id, "sessionId", sequence, "turnId", payload, "createdAt"`,
       )}
     )`;
}

const WRAP_SQL = `WITH RECURSIVE ${subSessionWrapperCtes(
  '$1',
  '$2::int',
  `(SELECT i.body::jsonb AS body, i.ord, $3::timestamp(3) AS created_at FROM unnest($4::text[]) WITH ORDINALITY AS i(body, ord)) w`,
)}
  SELECT id, "sessionId", sequence, "turnId", payload FROM wrapped`;

/** The inner event of a SUB_SESSION_EVENT wrapper, as it is stored in the wrapper's payload. */
export function innerEventJson(event: SessionEventMessage) {
  return {
    id: event.id,
    sessionId: event.sessionId,
    sequence: event.sequence,
    type: event.type,
    turnId: event.turnId,
    messageId: event.messageId,
    payload: event.payload,
    createdAt: event.createdAt,
  };
}

/** A stored wrapper row as a published event. */
export function wrapperMessage(
  row: { id: string; sessionId: string; sequence: number; turnId: string | null; payload: unknown },
  createdAt: string,
) {
  const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as { event?: { messageId?: string | null } };
  return {
    id: row.id,
    sessionId: row.sessionId,
    sequence: Number(row.sequence),
    type: 'SUB_SESSION_EVENT',
    turnId: row.turnId,
    // As the row stores it (WRAPPER_INSERT): live and replayed wrappers are the same.
    messageId: payload.event?.messageId ?? null,
    payload,
    createdAt,
  } satisfies SessionEventMessage;
}

/**
 * Copies events of a sub-session into the logs of the sessions above it as SUB_SESSION_EVENT
 * wrappers, inside the caller's transaction (appendEvents calls it; deleteSession calls it for the
 * live-only SessionDeleted of a sub-session whose parent stays). Returns the wrappers to publish.
 */
export async function appendSubSessionWrappers(
  db: SqlTarget,
  subSessionId: string,
  inner: SessionEventMessage[],
): Promise<SessionEventMessage[]> {
  if (inner.length === 0) return [];
  const createdAt = inner[0].createdAt;
  const rows = await asSql(db).query<{ id: string; sessionId: string; sequence: number; turnId: string | null; payload: unknown }>(
    WRAP_SQL,
    [subSessionId, inner.length, createdAt, inner.map((event) => JSON.stringify(innerEventJson(event)))],
  );
  return rows.sort((a, b) => Number(a.sequence) - Number(b.sequence)).map((row) => wrapperMessage(row, createdAt));
}

/**
 * Appends events to a session's log inside the caller's transaction, in one statement (the next
 * sequence numbers are taken from the session row). For a sub-session, a second statement copies
 * them into the logs of the sessions above it (`appendSubSessionWrappers`). Returns the events to
 * publish once the transaction has committed.
 */
export async function appendEvents(db: SqlTarget, sessionId: string, events: NewSessionEvent[]): Promise<SessionEventMessage[]> {
  if (events.length === 0) return [];
  const createdAt = new Date();
  const ids = events.map(() => uuidv7());
  const rows = await asSql(db).query<{ id: string; sequence: number; parentTurnId: string | null }>(APPEND_SQL, [
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
  const appended = events.map((event, i) => {
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
  if (!rows[0]?.parentTurnId) return appended;
  return [...appended, ...(await appendSubSessionWrappers(db, sessionId, appended))];
}

/** For the store-columns test: which columns this INSERT writes or leaves to their default. */
export const EVENT_INSERT_COLUMNS = Object.keys(EVENT_INSERT);
export const WRAPPER_INSERT_COLUMNS = Object.keys(WRAPPER_INSERT);

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
  lastSequence: true,
};

const EVENT_SQL = columnList(EVENT_COLUMNS);

/**
 * Stored events of a session with `after < sequence <= upTo` (to the end when `upTo` is null), oldest
 * first, a gapless run from `after + 1` as far as the log holds it: at least `limit` events when
 * there are that many, fewer only when the range has no more. One statement reads the rows that
 * start in the range (at most `limit` of them) and the folded rows that start before it and reach
 * into it, so a read racing a fold sees the log before it or after it, whole. Plain SQL, as the
 * counter read below: every subscription starts with these reads, and hundreds of sockets may
 * subscribe at once.
 */
export async function readEventsAfter(
  sql: SqlClient,
  sessionId: string,
  after: number,
  upTo: number | null,
  limit: number,
): Promise<SessionEventMessage[]> {
  const rows = await sql.query<SessionEvent>(
    `(SELECT ${EVENT_SQL} FROM "SessionEvent" WHERE "sessionId" = $1 AND sequence > $2${upTo === null ? '' : ' AND sequence <= $4'}
      ORDER BY sequence LIMIT $3)
     UNION ALL
     (SELECT ${EVENT_SQL} FROM "SessionEvent" WHERE "sessionId" = $1 AND "lastSequence" > $2 AND sequence <= $2)`,
    upTo === null ? [sessionId, after, limit] : [sessionId, after, limit, upTo],
  );
  for (const row of rows) row.sequence = Number(row.sequence);
  // A full page may have left rows unread: they start after the last row read, so the events up to
  // it are complete, and the ones after it (of folded rows read) come again with the next page.
  let starting = 0;
  let newest = after;
  for (const row of rows) {
    if (row.sequence > after) {
      starting++;
      newest = Math.max(newest, row.sequence);
    }
  }
  const end = starting >= limit ? (upTo === null ? newest : Math.min(newest, upTo)) : upTo;
  return expandEventRows(rows, after, end);
}

/** The sequence of a session's latest event (its counter), or null when the session does not exist (any more). */
export async function currentEventSequence(sql: SqlClient, sessionId: string): Promise<number | null> {
  const [row] = await sql.query<{ eventSequence: number }>('SELECT "eventSequence" FROM "Session" WHERE id = $1', [sessionId]);
  return row ? Number(row.eventSequence) : null;
}

/**
 * The smallest uuidv7 of millisecond `ms`: every event id made before `ms` sorts below it (ids are
 * compared as text; the hyphens sit at the same places in all of them).
 */
export function uuidv7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * One bounded batch of the retention sweep: the oldest `limit` events made before `before` (found
 * on the primary key: ids are time-ordered, `uuidv7Floor`), and with them every event of the same
 * session at or below the newest of them, so what a session keeps is always a gapless suffix of
 * its log (two writers can take ids and sequences in opposite orders; an id made in an older
 * process without time-ordered wrapper ids is caught the same way). A folded row goes whole or not
 * at all: the reach extends over every folded row that starts within it (and over the ones those
 * reach into), so no event of the suffix is lost with a folded row. Row locks on old events only:
 * appends, which insert new rows and move the session's counter, never wait for it, and a
 * concurrent sweep on another instance finds the rows gone and deletes nothing twice.
 * Returns how many old events the batch found (fewer than `limit`: nothing older is left) and how
 * many rows it deleted.
 */
export async function deleteEventsBefore(sql: SqlClient, before: Date, limit: number): Promise<{ found: number; deleted: number }> {
  const [row] = await sql.query<{ found: number; deleted: number }>(
    `WITH RECURSIVE batch AS (
       SELECT "sessionId", coalesce("lastSequence", sequence) AS sequence FROM "SessionEvent"
       WHERE id < $1 AND "createdAt" < $2::timestamp(3) ORDER BY id LIMIT $3
     ), reach("sessionId", sequence) AS (
       SELECT "sessionId", max(sequence) FROM batch GROUP BY "sessionId"
       UNION
       SELECT r."sessionId", f.last FROM reach r CROSS JOIN LATERAL (
         SELECT max(e."lastSequence") AS last FROM "SessionEvent" e
         WHERE e."sessionId" = r."sessionId" AND e."lastSequence" > r.sequence AND e.sequence <= r.sequence
       ) f WHERE f.last IS NOT NULL
     ), upto AS (
       SELECT "sessionId", max(sequence) AS sequence FROM reach GROUP BY "sessionId"
     ), gone AS (
       DELETE FROM "SessionEvent" e USING upto u WHERE e."sessionId" = u."sessionId" AND e.sequence <= u.sequence RETURNING 1
     )
     SELECT (SELECT count(*) FROM batch)::int AS found, (SELECT count(*) FROM gone)::int AS deleted`,
    [uuidv7Floor(before.getTime()), before.toISOString(), limit],
  );
  return { found: Number(row.found), deleted: Number(row.deleted) };
}

/**
 * The first sequence a replay of the session can still get (its oldest kept event's; its counter
 * + 1 when every event was swept), or null when the session does not exist.
 */
export async function firstKeptSequence(sql: SqlClient, sessionId: string): Promise<number | null> {
  const [row] = await sql.query<{ eventSequence: number; oldest: number | null }>(
    `SELECT s."eventSequence", (SELECT min(sequence) FROM "SessionEvent" e WHERE e."sessionId" = s.id) AS oldest
     FROM "Session" s WHERE s.id = $1`,
    [sessionId],
  );
  if (!row) return null;
  return row.oldest === null ? Number(row.eventSequence) + 1 : Number(row.oldest);
}
