/**
 * The append of messages to a session, as one statement: it takes the session row's lock (its
 * UPDATE), numbers the messages and their events from the counters it bumps, and inserts both.
 * Outside a transaction it is the whole write, in one round trip: concurrent appends to one session
 * queue on the row lock, and each sees the counters the previous one left (READ COMMITTED re-reads
 * the locked row), so positions and sequence numbers stay dense without a retry. Inside a
 * transaction that already holds the lock (appends into a turn, tool results, attachments) it is
 * the last statement of that transaction.
 *
 * A message's `text` column is derived from its parts in SQL, so a long text crosses the wire once.
 */
import type { Message, Session, SessionEvent } from '../../generated/prisma/client.js';
import type { SqlClient, SqlTarget } from '../sql.js';
import { asSql } from '../sql.js';
import { columnList, DEFAULT, insertSelectSql, type InsertValues } from './columns.js';
import { type contentColumns, MESSAGE_COLUMNS } from './messages.js';
import { SESSION_COLUMNS } from './session-columns.js';

/** One message to append: its row but for the columns the statement decides (position, text, session). */
export interface AppendedMessage {
  id: string;
  /** The id of its MESSAGE_ADDED event. */
  eventId: string;
  role: Message['role'];
  content: ReturnType<typeof contentColumns>;
  agentId: string | null;
  createdAt: Date;
}

/** The text parts of `parts` (a jsonb array) joined by newlines, as `joinText` does. */
const JOINED_TEXT = `(SELECT coalesce(string_agg(x.p->>'text', E'\\n' ORDER BY x.o), '')
     FROM jsonb_array_elements(u.parts) WITH ORDINALITY AS x(p, o) WHERE x.p->>'type' = 'text')`;

/** Each new message's row, over the numbered input `u`: every column of `Message`. */
const MESSAGE_INSERT: InsertValues<Message> = {
  id: 'u.id',
  sessionId: 'u.session_id',
  position: 'u.position',
  role: 'u.role::"MessageRole"',
  parts: 'u.parts',
  text: JOINED_TEXT,
  toolCallIds: 'ARRAY(SELECT jsonb_array_elements_text(u.call_ids))',
  toolResultIds: 'ARRAY(SELECT jsonb_array_elements_text(u.result_ids))',
  generating: 'u.generating',
  tokensO200k: 'u.o200k',
  tokensCl100k: 'u.cl100k',
  turnId: '$5',
  agentId: 'u.agent_id',
  createdAt: 'u.created_at',
  updatedAt: 'u.created_at',
};

/**
 * A message's event, every column of `SessionEvent`: `message` aliases the message's row (its id
 * and position), `fields` are the payload's fields after its `index`, `at` the other columns' values.
 */
function messageEventInsert(
  type: 'MESSAGE_ADDED' | 'MESSAGE_UPDATED',
  message: string,
  fields: string,
  at: Pick<InsertValues<SessionEvent>, 'id' | 'sessionId' | 'sequence' | 'turnId' | 'createdAt'>,
): InsertValues<SessionEvent> {
  return {
    id: at.id,
    sessionId: at.sessionId,
    sequence: at.sequence,
    type: `'${type}'::"SessionEventType"`,
    turnId: at.turnId,
    messageId: `${message}.id`,
    payload: `jsonb_build_object('index', ${message}.position, ${fields})`,
    createdAt: at.createdAt,
    lastSequence: DEFAULT,
  };
}

/** Each new message's MESSAGE_ADDED event. */
const EVENT_INSERT = messageEventInsert('MESSAGE_ADDED', 'u', `'role', u.role, 'generating', u.generating`, {
  id: 'u.event_id',
  sessionId: 'u.session_id',
  sequence: 'u.sequence',
  turnId: '$5',
  createdAt: '$4::timestamp(3)',
});

const SESSION_SQL = columnList(SESSION_COLUMNS);

const APPEND_SQL = `WITH s AS (
       UPDATE "Session"
       SET "messageCount" = "messageCount" + $3::int, "eventSequence" = "eventSequence" + $3::int, "updatedAt" = $4::timestamp(3)
       WHERE id = $1 AND "workspaceId" = $2 AND ($17::boolean OR "parentTurnId" IS NULL)
       RETURNING ${SESSION_SQL}
     ), u AS MATERIALIZED (
       SELECT i.id, i.role, i.parts::jsonb AS parts, i.call_ids::jsonb AS call_ids, i.result_ids::jsonb AS result_ids,
              i.generating, i.o200k, i.cl100k, i.agent_id, i.created_at, i.event_id, s.id AS session_id,
              s."messageCount" - $3::int + i.ord::int - 1 AS position, s."eventSequence" - $3::int + i.ord::int AS sequence
       FROM s, unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::boolean[], $12::int[], $13::int[],
                      $14::text[], $15::timestamp(3)[], $16::text[])
         WITH ORDINALITY AS i(id, role, parts, call_ids, result_ids, generating, o200k, cl100k, agent_id, created_at, event_id, ord)
     ), m AS (
       ${insertSelectSql({ table: 'Message', values: MESSAGE_INSERT }, 'FROM u')}
     ), e AS (
       ${insertSelectSql({ table: 'SessionEvent', values: EVENT_INSERT }, 'FROM u')}
     )
     SELECT ${SESSION_SQL} FROM s`;

/**
 * Appends `messages` at the end of the session (of the workspace) with their MESSAGE_ADDED events,
 * in one statement. Returns the session row after the append, or null when the workspace has no
 * such session (then nothing is written). Without `subSessions`, a sub-session is treated as not
 * found too: its events must also be wrapped into the logs above it (`appendSubSessionWrappers`),
 * in the transaction of the caller that passes `subSessions: true`.
 */
export async function appendMessageRows(
  db: SqlTarget,
  workspaceId: string,
  sessionId: string,
  turnId: string | null,
  messages: readonly AppendedMessage[],
  now: Date,
  subSessions: boolean,
): Promise<Session | null> {
  const [row] = await asSql(db).query<Session>(
    APPEND_SQL,
    [
      sessionId,
      workspaceId,
      messages.length,
      now.toISOString(),
      turnId,
      messages.map((m) => m.id),
      messages.map((m) => m.role),
      messages.map((m) => JSON.stringify(m.content.parts)),
      messages.map((m) => JSON.stringify(m.content.toolCallIds)),
      messages.map((m) => JSON.stringify(m.content.toolResultIds)),
      messages.map((m) => m.content.generating),
      messages.map((m) => m.content.tokensO200k),
      messages.map((m) => m.content.tokensCl100k),
      messages.map((m) => m.agentId),
      messages.map((m) => m.createdAt.toISOString()),
      messages.map((m) => m.eventId),
      subSessions,
    ],
    { name: 'sg_append_messages' },
  );
  return row ?? null;
}

/** One call's messages in a batched append (`appendMessageBatch`): the session it names, in its workspace. */
export interface AppendJob {
  workspaceId: string;
  sessionId: string;
  messages: readonly AppendedMessage[];
}

/**
 * The rows a batched append input holds for one job, as JSON objects for `jsonb_to_recordset`
 * (`o` orders the messages of one session across the batch). Made when the job is queued, so the
 * batch's parameter is these joined.
 */
export function batchInput(job: AppendJob, first: number): string {
  return job.messages
    .map((m, i) =>
      JSON.stringify({
        w: job.workspaceId,
        s: job.sessionId,
        o: first + i,
        id: m.id,
        role: m.role,
        parts: m.content.parts,
        call_ids: m.content.toolCallIds,
        result_ids: m.content.toolResultIds,
        generating: m.content.generating,
        o200k: m.content.tokensO200k,
        cl100k: m.content.tokensCl100k,
        agent_id: m.agentId,
        created_at: m.createdAt.toISOString(),
        event_id: m.eventId,
      }),
    )
    .join(',');
}

/**
 * The batched append: the messages of several calls, to one session or many, in one statement.
 * Each session's row is locked by its UPDATE (never waited for: a session another transaction
 * holds is skipped, and its calls are left to the single-call statement, which waits), its
 * counters are bumped by all of its messages at once, and its messages are numbered in input
 * order from the counters it had (READ COMMITTED re-reads a row updated since the snapshot). The
 * input is JSON rather than parallel arrays: the planner then estimates the same rows with and
 * without the values, so the named statement keeps one generic plan instead of planning each call.
 * Each session is read by its primary key alone (a LATERAL lookup per session of the batch, fenced
 * by OFFSET 0 so no other condition can be pushed into it, and `= ANY` for the UPDATE): PGlite runs
 * no autovacuum, so its tables have no statistics, and a join on the whole condition let the
 * planner take the `parentTurnId` index and read every root session of the database per append.
 */
const BATCH_SQL = `WITH i AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(w text, s text, o bigint, id text, role text, parts jsonb, call_ids jsonb,
         result_ids jsonb, generating boolean, o200k int, cl100k int, agent_id text, created_at timestamp(3), event_id text)
     ), c AS (
       SELECT i.s, i.w, count(*)::int AS n FROM i GROUP BY i.s, i.w
     ), l AS (
       SELECT x.id FROM c, LATERAL (
         SELECT x.id, x."parentTurnId" FROM "Session" x WHERE x.id = c.s AND x."workspaceId" = c.w
         FOR UPDATE SKIP LOCKED OFFSET 0
       ) x
       WHERE x."parentTurnId" IS NULL
     ), s AS (
       UPDATE "Session"
       SET "messageCount" = "messageCount" + c.n, "eventSequence" = "eventSequence" + c.n, "updatedAt" = $2::timestamp(3)
       FROM c
       WHERE "Session".id = ANY (ARRAY(SELECT l.id FROM l)) AND c.s = "Session".id AND "Session"."workspaceId" = c.w
       RETURNING ${columnList(SESSION_COLUMNS, '"Session"')}, c.n
     ), u AS MATERIALIZED (
       SELECT i.id, i.role, i.parts, i.call_ids, i.result_ids, i.generating, i.o200k, i.cl100k, i.agent_id, i.created_at, i.event_id,
              s.id AS session_id,
              s."messageCount" - s.n + (row_number() OVER w)::int - 1 AS position,
              s."eventSequence" - s.n + (row_number() OVER w)::int AS sequence
       FROM i JOIN s ON s.id = i.s AND s."workspaceId" = i.w
       WINDOW w AS (PARTITION BY i.s ORDER BY i.o)
     ), m AS (
       ${insertSelectSql({ table: 'Message', values: { ...MESSAGE_INSERT, turnId: 'NULL' } }, 'FROM u')}
     ), e AS (
       ${insertSelectSql({ table: 'SessionEvent', values: { ...EVENT_INSERT, turnId: 'NULL', createdAt: '$2::timestamp(3)' } }, 'FROM u')}
     )
     SELECT ${SESSION_SQL}, s.n, true AS appended FROM s
     UNION ALL
     SELECT ${columnList(SESSION_COLUMNS, 'x')}, 0, false FROM c, LATERAL (
       SELECT * FROM "Session" x WHERE x.id = c.s AND x."workspaceId" = c.w OFFSET 0
     ) x
     WHERE x."parentTurnId" IS NULL AND NOT EXISTS (SELECT 1 FROM s WHERE s.id = x.id)`;

/** What a batched append did to one session. */
export type BatchedSession =
  /** Appended: the session row after the whole batch, and how many of the batch's messages it took. */
  | { appended: true; session: Session; count: number }
  /** Held by another transaction: nothing appended; the single-call statement waits for it. */
  | { appended: false; session: Session; count: 0 };

/**
 * Runs a batched append (`BATCH_SQL`); `input` is the jobs' `batchInput`s joined by commas.
 * Returns what happened to each session that is in its workspace and not a sub-session; the
 * others (unknown, another workspace's, a sub-session) are not in the map and nothing of theirs
 * was written.
 */
export async function appendMessageBatch(db: SqlClient, input: string, now: Date): Promise<Map<string, BatchedSession>> {
  const rows = await db.query<Session & { n: number; appended: boolean }>(BATCH_SQL, [`[${input}]`, now.toISOString()], {
    name: 'sg_append_batch',
  });
  const out = new Map<string, BatchedSession>();
  for (const { n, appended, ...session } of rows) {
    out.set(batchKey(session.workspaceId, session.id), appended ? { appended, session, count: n } : { appended, session, count: 0 });
  }
  return out;
}

/** The key of a session in `appendMessageBatch`'s answer. */
export const batchKey = (workspaceId: string, sessionId: string) => `${workspaceId}/${sessionId}`;

/** For the store-columns test: the columns these INSERTs write. */
export const APPEND_INSERT_COLUMNS = { Message: Object.keys(MESSAGE_INSERT), SessionEvent: Object.keys(EVENT_INSERT) };

/** Each streamed text's MESSAGE_UPDATED event, over the updated message `m` and session `s`. */
const STREAM_EVENT_INSERT = messageEventInsert('MESSAGE_UPDATED', 'm', `'generating', true, 'appendText', $3::text`, {
  id: '$4',
  sessionId: 's.id',
  sequence: 's."eventSequence"',
  turnId: 'm."turnId"',
  createdAt: '$5::timestamp(3)',
});

const LAST_PART_IS_TEXT = `jsonb_typeof(c.parts->-1) = 'object' AND c.parts->-1->>'type' = 'text'`;

const APPEND_TEXT_SQL = `WITH l AS (
       SELECT s.id FROM "Session" s
       WHERE s.id = (SELECT "sessionId" FROM "Message" WHERE id = $1) AND s."workspaceId" = $2 AND s."parentTurnId" IS NULL
       FOR UPDATE
     ), c AS (
       SELECT m.id, m.parts, m.text, m.position, m."turnId",
              (SELECT coalesce(sum(char_length(p->>'text')), 0) FROM jsonb_array_elements(m.parts) p WHERE p->>'type' = 'text') AS chars,
              EXISTS (SELECT 1 FROM jsonb_array_elements(m.parts) p WHERE p->>'type' = 'text') AS has_text
       FROM "Message" m, l
       WHERE m.id = $1 AND m."sessionId" = l.id AND m.generating AND m.role <> 'TOOL'
       FOR UPDATE OF m
     ), ok AS (
       SELECT * FROM c WHERE 2 * c.chars + $6::int <= $7::int
     ), m AS (
       UPDATE "Message" SET
         parts = CASE WHEN ${LAST_PART_IS_TEXT}
           THEN jsonb_set(c.parts, ARRAY[(jsonb_array_length(c.parts) - 1)::text, 'text'], to_jsonb((c.parts->-1->>'text') || $3::text))
           ELSE c.parts || jsonb_build_array(jsonb_build_object('type', 'text', 'text', $3::text)) END,
         text = CASE WHEN ${LAST_PART_IS_TEXT} THEN c.text || $3::text WHEN c.has_text THEN c.text || E'\\n' || $3::text ELSE $3::text END,
         "updatedAt" = $5::timestamp(3)
       FROM ok c WHERE "Message".id = c.id
       RETURNING "Message".*
     ), s AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + 1 FROM m WHERE "Session".id = m."sessionId"
       RETURNING "Session".id, "Session"."eventSequence"
     ), t AS (
       UPDATE "Turn" SET "lastActivityAt" = $5::timestamp(3) FROM m WHERE "Turn".id = m."turnId" AND "Turn".status = 'ACTIVE'
     ), e AS (
       ${insertSelectSql({ table: 'SessionEvent', values: STREAM_EVENT_INSERT }, 'FROM m, s')}
     )
     SELECT ${columnList(MESSAGE_COLUMNS, 'm')}, s."eventSequence" AS "eventSequence" FROM m, s`;

/**
 * Streams `text` onto the end of a generating message's last text part (or a new text part), with
 * its MESSAGE_UPDATED event and the turn's activity, in one statement that locks the session row
 * first, then the message (the order every write takes). Returns the message after the change and
 * the event's sequence, or null when this statement is not the one to decide: the message is not
 * found in the workspace, is finished, is a TOOL message, belongs to a sub-session (whose events
 * are also wrapped into the logs above it), or its text may come near the cap (the
 * caller then takes the general path, which refuses with the exact reason). Nothing is written then.
 */
export async function appendTextRow(
  db: SqlTarget,
  workspaceId: string,
  messageId: string,
  text: string,
  eventId: string,
  now: Date,
  maxChars: number,
): Promise<{ message: Message; sequence: number } | null> {
  const [row] = await asSql(db).query<Message & { eventSequence: number }>(
    APPEND_TEXT_SQL,
    [messageId, workspaceId, text, eventId, now.toISOString(), text.length, maxChars],
    { name: 'sg_append_text' },
  );
  if (!row) return null;
  const { eventSequence, ...message } = row;
  return { message, sequence: Number(eventSequence) };
}

/** For the store-columns test. */
export const STREAM_EVENT_INSERT_COLUMNS = Object.keys(STREAM_EVENT_INSERT);
