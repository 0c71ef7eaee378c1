/**
 * Folded rows of the `SessionEvent` log: once a streamed message is finished, the rows of its
 * MESSAGE_UPDATED events (every delta, and the finish itself) are replaced by one row per log that
 * holds them, so the message costs two rows in its session's log (its MESSAGE_ADDED and the
 * folded row) however many deltas it had, and two in each log above a sub-session (the wrappers,
 * folded the same way).
 *
 * A folded row keeps every event whole: each keeps its own id, sequence, createdAt and payload (the
 * row's type, turnId and messageId are theirs too, all alike). The row takes its first event's
 * `sequence` and its last one's `lastSequence`; events of the session that came between them (other
 * messages, usage, turn events) stay rows of their own, so a replay reads the rows whose range
 * reaches past its starting point and merges the events in sequence order (`expandEventRows`). The
 * sequences, and what a replay hands out, are exactly what they were before the fold.
 */
import type { SessionEvent } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../session-events.js';
import { asSql, type SqlTarget } from '../sql.js';
import { insertSelectSql, type InsertValues } from './columns.js';

/**
 * A time-ordered id made in SQL, shaped as `uuidv7()` makes them (48 bits of milliseconds, version
 * 7, variant 8, random bits): every event id, wrapper ids included, sorts by its creation time, which
 * is what the retention sweep's primary-key range (`deleteEventsBefore`) relies on.
 */
export const UUIDV7_SQL = `regexp_replace(
    lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
      || '7' || substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15),
    '^(.{8})(.{4})(.{4})(.{4})(.{12})$', '\\1-\\2-\\3-\\4-\\5')`;

/** One event inside a folded row's `payload.folded`. */
interface FoldedEvent {
  id: string;
  sequence: number;
  createdAt: string;
  payload: unknown;
}

/**
 * The folded row of each group `g` of deleted rows: a new time-ordered id (the row is made now;
 * its events keep theirs), the first event's sequence, the newest event's createdAt (what the
 * retention sweep compares), and the events in order.
 */
const FOLDED_INSERT: InsertValues<SessionEvent> = {
  id: UUIDV7_SQL,
  sessionId: 'g."sessionId"',
  sequence: 'g.first',
  type: 'g.type',
  turnId: 'g."turnId"',
  messageId: '$1',
  payload: `jsonb_build_object('folded', g.folded)`,
  createdAt: 'g.created_at',
  lastSequence: 'g.last',
};

/**
 * One statement, so the rows a replay reads are the unfolded ones or the folded one, never neither
 * (a statement's snapshot sees the fold's transaction whole or not at all). The message's update
 * rows are found by `messageId` in every log at once: its own session's MESSAGE_UPDATED rows and
 * the SUB_SESSION_EVENT wrappers of them above a sub-session. Rows already folded stay as they are.
 */
const FOLD_SQL = `WITH gone AS (
       DELETE FROM "SessionEvent" e
       WHERE e."messageId" = $1 AND e."lastSequence" IS NULL
         AND (e.type = 'MESSAGE_UPDATED' OR (e.type = 'SUB_SESSION_EVENT' AND e.payload->'event'->>'type' = 'MESSAGE_UPDATED'))
       RETURNING e.id, e."sessionId", e.sequence, e.type, e."turnId", e.payload, e."createdAt"
     ), g AS (
       SELECT "sessionId", type, "turnId", min(sequence) AS first, max(sequence) AS last, max("createdAt") AS created_at,
              jsonb_agg(jsonb_build_object('id', id, 'sequence', sequence,
                'createdAt', to_char("createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'payload', payload) ORDER BY sequence) AS folded
       FROM gone GROUP BY "sessionId", type, "turnId"
     ), folded AS (
       ${insertSelectSql({ table: 'SessionEvent', values: FOLDED_INSERT }, 'FROM g RETURNING 1')}
     )
     SELECT (SELECT count(*) FROM gone)::int AS events, (SELECT count(*) FROM folded)::int AS rows`;

/**
 * Folds the update rows of a message that has just finished, inside the transaction that finished
 * it (after its last event was appended, with the session's row lock held, so no update of the
 * message can come later). Returns how many event rows it replaced, and by how many rows.
 */
export async function foldMessageEvents(db: SqlTarget, messageId: string): Promise<{ events: number; rows: number }> {
  const [row] = await asSql(db).query<{ events: number; rows: number }>(FOLD_SQL, [messageId], { name: 'sg_fold_message_events' });
  return { events: Number(row.events), rows: Number(row.rows) };
}

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

/**
 * The events of stored rows (plain ones and folded ones, in any order) with `after < sequence <=
 * upTo`, in sequence order. `upTo` is null for no upper bound.
 */
export function expandEventRows(rows: readonly SessionEvent[], after: number, upTo: number | null): SessionEventMessage[] {
  const events: SessionEventMessage[] = [];
  let sorted = true;
  for (const row of rows) {
    if (row.lastSequence === null) {
      if (row.sequence > after && (upTo === null || row.sequence <= upTo)) push(toMessage(row));
      continue;
    }
    const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as { folded: FoldedEvent[] };
    for (const item of payload.folded) {
      const sequence = Number(item.sequence);
      if (sequence <= after) continue;
      if (upTo !== null && sequence > upTo) break;
      push({
        id: item.id,
        sessionId: row.sessionId,
        sequence,
        type: row.type,
        turnId: row.turnId,
        messageId: row.messageId,
        payload: item.payload,
        createdAt: item.createdAt,
      });
    }
  }
  if (!sorted) events.sort((a, b) => a.sequence - b.sequence);
  return events;

  function push(event: SessionEventMessage) {
    if (events.length && events[events.length - 1].sequence > event.sequence) sorted = false;
    events.push(event);
  }
}
