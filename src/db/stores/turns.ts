/**
 * Every statement on turns, their agents and their usage reports. Rows come back as Prisma would
 * give them (see db/sql.ts). Callers hold the session's row lock (`lockSession*`) for every write:
 * that one lock orders all changes to a session's turns, on one server or many.
 */
import type { TurnAgentStatus, TurnStatus, UsageCounts } from '../../domain/turns.js';
import type { SessionEvent, Turn, TurnAgent, TurnUsageReport } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../session-events.js';
import type { SqlClient } from '../sql.js';
import { MAX_SUB_SESSION_DEPTH, subSessionWrapperCtes, wrapperMessage } from './events.js';
import { DEFAULT, insertSelectSql, insertSql, type InsertShape } from './columns.js';

export type TurnRow = Turn;

export interface AgentState {
  agentId: string;
  status: TurnAgentStatus;
  error: string | null;
}

/** A turn with its agents' states, read under the session's lock. */
export interface TurnWithAgents extends TurnRow {
  agents: AgentState[];
}

export interface LockedTurnSession {
  id: string;
  turnCount: number;
  activeTurnId: string | null;
}

const ts = (date: Date) => date.toISOString();

/** Locks a session of the workspace; null when there is none. */
export async function lockSession(sql: SqlClient, workspaceId: string, sessionId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>(
    'SELECT id, "turnCount", "activeTurnId" FROM "Session" WHERE id = $1 AND "workspaceId" = $2 FOR UPDATE',
    [sessionId, workspaceId],
  );
  return row ?? null;
}

/**
 * Locks the session a turn belongs to (when the turn is in the workspace); null when there is no
 * such turn. The turn itself is read afterwards, in a new statement, so it reflects every change
 * committed before the lock was granted.
 */
export async function lockSessionOfTurn(sql: SqlClient, workspaceId: string, turnId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>(
    `SELECT id, "turnCount", "activeTurnId" FROM "Session"
     WHERE id = (SELECT "sessionId" FROM "Turn" WHERE id = $1) AND "workspaceId" = $2 FOR UPDATE`,
    [turnId, workspaceId],
  );
  return row ?? null;
}

const WITH_AGENTS = `SELECT t.*, coalesce((
    SELECT json_agg(json_build_object('agentId', a."agentId", 'status', a.status, 'error', a.error) ORDER BY a."agentId")
    FROM "TurnAgent" a WHERE a."turnId" = t.id), '[]'::json) AS agents
  FROM "Turn" t`;

export async function readTurn(sql: SqlClient, turnId: string): Promise<TurnWithAgents | null> {
  const [row] = await sql.query<TurnWithAgents>(`${WITH_AGENTS} WHERE t.id = $1`, [turnId]);
  return row ?? null;
}

export async function findByClientTurnId(sql: SqlClient, sessionId: string, clientTurnId: string): Promise<TurnRow | null> {
  const [row] = await sql.query<TurnRow>('SELECT * FROM "Turn" WHERE "sessionId" = $1 AND "clientTurnId" = $2', [sessionId, clientTurnId]);
  return row ?? null;
}

const USAGE_DEFAULTS = {
  inputTokens: DEFAULT,
  outputTokens: DEFAULT,
  cacheReadTokens: DEFAULT,
  cacheWriteTokens: DEFAULT,
  cost: DEFAULT,
} as const;

/**
 * The INSERTs below, per column of their table (a new column is a type error here until it is
 * written or deliberately left to its default; test/integration/store-columns.test.ts checks the
 * same lists against the migrated tables). Values name insertTurn's and recordUsage's parameters.
 */
export const TURN_INSERT: InsertShape<Turn> = {
  table: 'Turn',
  values: {
    id: '$1',
    sessionId: '$2',
    number: '$3',
    clientTurnId: '$4',
    status: `'ACTIVE'`,
    initiatorKind: '$5::"InitiatorKind"',
    initiatorId: '$6',
    ...USAGE_DEFAULTS,
    error: DEFAULT,
    context: DEFAULT,
    contextSettingsFingerprint: DEFAULT,
    contextHistoryMark: DEFAULT,
    startedAt: '$7::timestamp(3)',
    completedAt: DEFAULT,
    lastActivityAt: '$7::timestamp(3)',
  },
};

/** One row per agent id of `unnest($8) AS agent`. */
export const TURN_AGENT_INSERT: InsertShape<TurnAgent> = {
  table: 'TurnAgent',
  values: { turnId: '$1', agentId: 'agent', status: `'ACTIVE'`, ...USAGE_DEFAULTS, error: DEFAULT, completedAt: DEFAULT },
};

/** The report, selected from its turn `t` (so nothing is written for a turn outside the workspace). */
export const USAGE_REPORT_INSERT: InsertShape<TurnUsageReport> = {
  table: 'TurnUsageReport',
  values: {
    id: '$1',
    turnId: 't.id',
    callId: '$3',
    agentId: '$4',
    model: '$5',
    inputTokens: '$6',
    outputTokens: '$7',
    cacheReadTokens: '$8',
    cacheWriteTokens: '$9',
    cost: '$10',
    createdAt: '$11::timestamp(3)',
  },
};

const usageObject = (alias: string) =>
  `jsonb_build_object('inputTokens', ${alias}."inputTokens", 'outputTokens', ${alias}."outputTokens",
     'cacheReadTokens', ${alias}."cacheReadTokens", 'cacheWriteTokens', ${alias}."cacheWriteTokens", 'cost', ${alias}.cost)`;

/** The TURN_USAGE_UPDATED event, from the session `s` (its next sequence), the turn `t` and the agent `a` after the report. */
export const USAGE_EVENT_INSERT: InsertShape<SessionEvent> = {
  table: 'SessionEvent',
  values: {
    id: '$13',
    sessionId: 's.id',
    sequence: 's."eventSequence"',
    type: `'TURN_USAGE_UPDATED'`,
    turnId: '$2',
    messageId: DEFAULT,
    payload: `jsonb_build_object('agentId', $4::text, 'callId', $3::text, 'model', $5::text,
           'delta', jsonb_build_object('inputTokens', $6::bigint, 'outputTokens', $7::bigint, 'cacheReadTokens', $8::bigint,
             'cacheWriteTokens', $9::bigint, 'cost', $10::float8),
           'total', ${usageObject('t')}, 'agentTotal', ${usageObject('a')})`,
    createdAt: '$11::timestamp(3)',
  },
};

const INSERT_TURN_SQL = `WITH t AS (
       ${insertSql(TURN_INSERT)} RETURNING *
     ), a AS (
       ${insertSelectSql(TURN_AGENT_INSERT, 'FROM unnest($8::text[]) AS agent')}
     ), s AS (
       UPDATE "Session" SET "turnCount" = $3, "activeTurnId" = $1, "updatedAt" = $7::timestamp(3) WHERE id = $2
     )
     SELECT * FROM t`;

/** Inserts turn number `number` with its agents and makes it the session's active turn, in one statement. */
export async function insertTurn(
  sql: SqlClient,
  turn: {
    id: string;
    sessionId: string;
    number: number;
    clientTurnId: string | null;
    initiatorKind: string;
    initiatorId: string | null;
    agentIds: string[];
    now: Date;
  },
): Promise<TurnRow> {
  const [row] = await sql.query<TurnRow>(INSERT_TURN_SQL, [
    turn.id,
    turn.sessionId,
    turn.number,
    turn.clientTurnId,
    turn.initiatorKind,
    turn.initiatorId,
    ts(turn.now),
    turn.agentIds,
  ]);
  return row;
}

/** Records a turn's assembled context and the settings fingerprint it was assembled with; false when the turn is gone. */
export async function recordContext(
  sql: SqlClient,
  turnId: string,
  context: unknown,
  settingsFingerprint: string,
  historyMark: number,
): Promise<boolean> {
  const rows = await sql.query<{ id: string }>(
    'UPDATE "Turn" SET context = $2::jsonb, "contextSettingsFingerprint" = $3, "contextHistoryMark" = $4 WHERE id = $1 RETURNING id',
    [turnId, JSON.stringify(context), settingsFingerprint, historyMark],
  );
  return rows.length > 0;
}

/** A turn of the workspace with its session and agents, read without a lock (reportUsage's checks). */
export async function readTurnInWorkspace(sql: SqlClient, workspaceId: string, turnId: string): Promise<TurnWithAgents | null> {
  const [row] = await sql.query<TurnWithAgents>(
    `${WITH_AGENTS} WHERE t.id = $1 AND EXISTS (SELECT 1 FROM "Session" s WHERE s.id = t."sessionId" AND s."workspaceId" = $2)`,
    [turnId, workspaceId],
  );
  return row ?? null;
}

export interface RecordedUsage {
  turn: TurnRow;
  /** SUB_SESSION_EVENT wrappers of the usage event in the logs of the sessions above a sub-session. */
  wrappers: SessionEventMessage[];
  agentTotal: UsageCounts;
  event: { id: string; sequence: number; payload: Record<string, unknown>; createdAt: Date };
}

const RECORD_USAGE_SQL = `WITH RECURSIVE r AS (
       ${insertSelectSql(
         USAGE_REPORT_INSERT,
         `FROM "Turn" t JOIN "Session" ws ON ws.id = t."sessionId" AND ws."workspaceId" = $12
       WHERE t.id = $2
         AND EXISTS (SELECT 1 FROM "TurnAgent" ag WHERE ag."turnId" = $2 AND ag."agentId" = $4)
         AND t."inputTokens" + t."outputTokens" + t."cacheReadTokens" + t."cacheWriteTokens" + $6 + $7 + $8 + $9 <= $14
       ON CONFLICT ("turnId", "callId") DO NOTHING
       RETURNING "turnId"`,
       )}
     ), s AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + 1
       WHERE id = (SELECT "sessionId" FROM "Turn" WHERE id = $2) AND EXISTS (SELECT 1 FROM r)
       RETURNING id, "eventSequence"
     ), a AS (
       UPDATE "TurnAgent" SET "inputTokens" = "inputTokens" + $6, "outputTokens" = "outputTokens" + $7,
         "cacheReadTokens" = "cacheReadTokens" + $8, "cacheWriteTokens" = "cacheWriteTokens" + $9, cost = cost + $10
       WHERE "turnId" = $2 AND "agentId" = $4 AND EXISTS (SELECT 1 FROM s)
       RETURNING "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", cost
     ), t AS (
       UPDATE "Turn" SET "inputTokens" = "inputTokens" + $6, "outputTokens" = "outputTokens" + $7,
         "cacheReadTokens" = "cacheReadTokens" + $8, "cacheWriteTokens" = "cacheWriteTokens" + $9, cost = cost + $10,
         "lastActivityAt" = CASE WHEN status = 'ACTIVE' THEN $11::timestamp(3) ELSE "lastActivityAt" END
       WHERE id = $2 AND EXISTS (SELECT 1 FROM s)
       RETURNING *
     ), e AS (
       ${insertSelectSql(USAGE_EVENT_INSERT, 'FROM s, t, a RETURNING id, sequence, payload, "createdAt"')}
     ), ${subSessionWrapperCtes(
       '(SELECT id FROM s)',
       '1',
       `(SELECT jsonb_build_object('id', e.id, 'sessionId', s.id, 'sequence', e.sequence, 'type', 'TURN_USAGE_UPDATED',
           'turnId', $2::text, 'messageId', NULL, 'payload', e.payload,
           'createdAt', to_char($11::timestamp(3), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS body, 1 AS ord, $11::timestamp(3) AS created_at
         FROM e, s) w`,
     )}
     SELECT t.*, row_to_json(a) AS "agentTotal", row_to_json(e) AS event,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'sessionId', "sessionId", 'sequence', sequence, 'turnId', "turnId",
          'payload', payload) ORDER BY sequence), '[]'::json) FROM wrapped) AS wrappers
     FROM t, a, e`;

/**
 * Records one usage report in a single statement, so no lock is held across round trips: the
 * report row, the session's next event sequence (this row lock orders the report with every other
 * write to the session, as appendEvents does), the agent's and the turn's sums (an ACTIVE turn's
 * `lastActivityAt` moves to `now`), and the TURN_USAGE_UPDATED event with the totals after it.
 * Nothing is written, and null returned, unless the turn is in the workspace, the agent is one of
 * its agents, no report with the same callId exists, and the turn's totalTokens would not pass `maxTotal` (checked
 * against the totals the statement sees): the caller then reads the turn to tell which.
 */
export async function recordUsage(
  sql: SqlClient,
  report: {
    id: string;
    eventId: string;
    workspaceId: string;
    turnId: string;
    agentId: string;
    callId: string | null;
    model: string | null;
    usage: UsageCounts;
    maxTotal: number;
    now: Date;
  },
): Promise<(RecordedUsage & { sessionId: string }) | null> {
  const u = report.usage;
  const [row] = await sql.query<
    TurnRow & {
      agentTotal: Record<string, string | number>;
      event: RecordedUsage['event'] & { createdAt: string };
      wrappers: { id: string; sessionId: string; sequence: number; turnId: string | null; payload: unknown }[];
    }
  >(RECORD_USAGE_SQL, [
    report.id,
    report.turnId,
    report.callId,
    report.agentId,
    report.model,
    u.inputTokens.toString(),
    u.outputTokens.toString(),
    u.cacheReadTokens.toString(),
    u.cacheWriteTokens.toString(),
    u.cost,
    ts(report.now),
    report.workspaceId,
    report.eventId,
    report.maxTotal,
  ]);
  if (!row) return null;
  const { agentTotal, event, wrappers, ...turn } = row;
  return {
    turn: turn as TurnRow,
    wrappers: wrappers.map((w) => wrapperMessage(w, ts(report.now))),
    agentTotal: {
      inputTokens: BigInt(agentTotal.inputTokens),
      outputTokens: BigInt(agentTotal.outputTokens),
      cacheReadTokens: BigInt(agentTotal.cacheReadTokens),
      cacheWriteTokens: BigInt(agentTotal.cacheWriteTokens),
      cost: Number(agentTotal.cost),
    },
    sessionId: (turn as TurnRow).sessionId,
    event: { ...event, sequence: Number(event.sequence), createdAt: report.now },
  };
}

export async function setAgentStatus(
  sql: SqlClient,
  turnId: string,
  agentId: string,
  status: TurnAgentStatus,
  error: string | null,
  now: Date,
) {
  await sql.query(
    `UPDATE "TurnAgent" SET status = $3::"TurnAgentStatus", error = $4, "completedAt" = $5::timestamp(3)
     WHERE "turnId" = $1 AND "agentId" = $2`,
    [turnId, agentId, status, error, ts(now)],
  );
}

export async function touchTurn(sql: SqlClient, turnId: string, now: Date): Promise<TurnRow> {
  const [row] = await sql.query<TurnRow>('UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1 RETURNING *', [
    turnId,
    ts(now),
  ]);
  return row;
}

/** Moves an ACTIVE turn's `lastActivityAt` (a message of the turn was written); ended turns stay as they are. */
export async function touchIfActive(sql: SqlClient, turnId: string, now: Date) {
  await sql.query(`UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1 AND status = 'ACTIVE'`, [turnId, ts(now)]);
}

/**
 * Ends an ACTIVE turn: its status, error and end time, its still-active agents set to
 * `agentStatus`, and the session's active turn cleared. The turn's own row changes only while it
 * is ACTIVE, and (for the sweeper) only while it is still idle since `idleBefore`: the returned row
 * is null when another caller ended or touched it first, so an ending happens exactly once.
 */
export async function endTurn(
  sql: SqlClient,
  end: {
    turnId: string;
    status: Exclude<TurnStatus, 'ACTIVE'>;
    error: string | null;
    agentStatus: TurnAgentStatus;
    now: Date;
    idleBefore?: Date;
  },
): Promise<TurnRow | null> {
  const [row] = await sql.query<TurnRow>(
    `WITH t AS (
       UPDATE "Turn" SET status = $2::"TurnStatus", error = $3, "completedAt" = $5::timestamp(3)
       WHERE id = $1 AND status = 'ACTIVE' AND ($6::timestamp(3) IS NULL OR "lastActivityAt" < $6::timestamp(3))
       RETURNING *
     ), a AS (
       UPDATE "TurnAgent" SET status = $4::"TurnAgentStatus", error = CASE WHEN $7::boolean THEN coalesce(error, $3) ELSE error END,
         "completedAt" = $5::timestamp(3)
       WHERE "turnId" = $1 AND status = 'ACTIVE' AND EXISTS (SELECT 1 FROM t)
     ), s AS (
       UPDATE "Session" SET "activeTurnId" = NULL WHERE "activeTurnId" = $1 AND EXISTS (SELECT 1 FROM t)
     )
     SELECT * FROM t`,
    [
      end.turnId,
      end.status,
      end.error,
      end.agentStatus,
      ts(end.now),
      end.idleBefore ? ts(end.idleBefore) : null,
      end.agentStatus === 'FAILED',
    ],
  );
  return row ?? null;
}

/** ACTIVE turns idle since before `idleBefore` (a hint: each is re-checked under its session's lock). */
export async function staleTurns(sql: SqlClient, idleBefore: Date, limit: number): Promise<{ id: string; sessionId: string }[]> {
  return sql.query(
    `SELECT id, "sessionId" FROM "Turn" WHERE status = 'ACTIVE' AND "lastActivityAt" < $1::timestamp(3)
     ORDER BY "lastActivityAt" LIMIT $2`,
    [ts(idleBefore), limit],
  );
}

export async function lockSessionById(sql: SqlClient, sessionId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>('SELECT id, "turnCount", "activeTurnId" FROM "Session" WHERE id = $1 FOR UPDATE', [
    sessionId,
  ]);
  return row ?? null;
}

/** The turn of a session with this id and its status (appendMessages checks it). */
export async function turnStatusIn(sql: SqlClient, sessionId: string, turnId: string): Promise<TurnStatus | null> {
  const [row] = await sql.query<{ status: TurnStatus }>('SELECT status FROM "Turn" WHERE id = $1 AND "sessionId" = $2', [
    turnId,
    sessionId,
  ]);
  return row?.status ?? null;
}

export interface ModelUsage extends UsageCounts {
  model: string | null;
}

const SUMS = `coalesce(sum(r."inputTokens"), 0)::bigint AS "inputTokens", coalesce(sum(r."outputTokens"), 0)::bigint AS "outputTokens",
  coalesce(sum(r."cacheReadTokens"), 0)::bigint AS "cacheReadTokens", coalesce(sum(r."cacheWriteTokens"), 0)::bigint AS "cacheWriteTokens",
  coalesce(sum(r.cost), 0)::float8 AS cost`;

/** Usage per model for each of `turnIds`, models in name order (unnamed last). */
export async function usageByModelForTurns(sql: SqlClient, turnIds: readonly string[]): Promise<(ModelUsage & { turnId: string })[]> {
  return sql.query(
    `SELECT r."turnId", r.model, ${SUMS} FROM "TurnUsageReport" r WHERE r."turnId" = ANY($1::text[])
     GROUP BY r."turnId", r.model ORDER BY r."turnId", r.model NULLS LAST`,
    [turnIds],
  );
}

/** Usage per model over each session's own turns. */
export async function usageByModelForSessions(
  sql: SqlClient,
  sessionIds: readonly string[],
): Promise<(ModelUsage & { sessionId: string })[]> {
  return sql.query(
    `SELECT t."sessionId", r.model, ${SUMS} FROM "TurnUsageReport" r JOIN "Turn" t ON t.id = r."turnId"
     WHERE t."sessionId" = ANY($1::text[]) GROUP BY t."sessionId", r.model ORDER BY t."sessionId", r.model NULLS LAST`,
    [sessionIds],
  );
}

const TURN_SUMS = `coalesce(sum(t."inputTokens"), 0)::bigint AS "inputTokens", coalesce(sum(t."outputTokens"), 0)::bigint AS "outputTokens",
  coalesce(sum(t."cacheReadTokens"), 0)::bigint AS "cacheReadTokens", coalesce(sum(t."cacheWriteTokens"), 0)::bigint AS "cacheWriteTokens",
  coalesce(sum(t.cost), 0)::float8 AS cost`;

/** Usage over each session's own turns. */
export async function usageForSessions(sql: SqlClient, sessionIds: readonly string[]): Promise<(UsageCounts & { sessionId: string })[]> {
  return sql.query(`SELECT t."sessionId", ${TURN_SUMS} FROM "Turn" t WHERE t."sessionId" = ANY($1::text[]) GROUP BY t."sessionId"`, [
    sessionIds,
  ]);
}

/** Usage over every turn of each fork tree (by root id). */
export async function usageForTrees(sql: SqlClient, rootIds: readonly string[]): Promise<(UsageCounts & { rootId: string })[]> {
  return sql.query(
    `SELECT s."rootId", ${TURN_SUMS} FROM "Turn" t JOIN "Session" s ON s.id = t."sessionId"
     WHERE s."rootId" = ANY($1::text[]) GROUP BY s."rootId"`,
    [rootIds],
  );
}

/**
 * Sub-agent sessions below each `top`: `base` is a SELECT of (top, sid, depth) rows to start from,
 * and each level adds the sessions running in a turn of one found before (as deep as sub-sessions
 * may nest). Usage sums are computed here at read time, in one statement, so every total is one
 * consistent snapshot however many reports race in the parent and its sub-sessions; nothing is
 * maintained, so a report locks nothing above its own session.
 */
const agentTree = (base: string) => `WITH RECURSIVE tree(top, sid, depth) AS (
    ${base}
    UNION ALL
    SELECT tree.top, s.id, tree.depth + 1 FROM tree JOIN "Turn" pt ON pt."sessionId" = tree.sid JOIN "Session" s ON s."parentTurnId" = pt.id
    WHERE tree.depth < ${MAX_SUB_SESSION_DEPTH + 1}
  )`;

/**
 * Usage of each turn with everything its sub-agent sessions (and theirs, recursively) spent: the
 * turn's own counters plus every turn of every session nested in it.
 */
export async function rolledUpUsageForTurns(sql: SqlClient, turnIds: readonly string[]): Promise<(UsageCounts & { turnId: string })[]> {
  return sql.query(
    `${agentTree(`SELECT s."parentTurnId", s.id, 1 FROM "Session" s WHERE s."parentTurnId" = ANY($1::text[])`)}
     SELECT t.top AS "turnId", ${TURN_SUMS} FROM (
       SELECT own.id AS top, own."inputTokens", own."outputTokens", own."cacheReadTokens", own."cacheWriteTokens", own.cost
       FROM "Turn" own WHERE own.id = ANY($1::text[])
       UNION ALL
       SELECT tree.top, n."inputTokens", n."outputTokens", n."cacheReadTokens", n."cacheWriteTokens", n.cost
       FROM tree JOIN "Turn" n ON n."sessionId" = tree.sid
     ) t GROUP BY t.top`,
    [turnIds],
  );
}

/** Usage over each session's turns, with what the sub-agent sessions nested in them spent. */
export async function rolledUpUsageForSessions(
  sql: SqlClient,
  sessionIds: readonly string[],
): Promise<(UsageCounts & { sessionId: string })[]> {
  return sql.query(
    `${agentTree('SELECT x, x, 0 FROM unnest($1::text[]) AS x')}
     SELECT tree.top AS "sessionId", ${TURN_SUMS} FROM tree JOIN "Turn" t ON t."sessionId" = tree.sid GROUP BY tree.top`,
    [sessionIds],
  );
}

/** Usage over every turn of each fork tree (by root id), with the sub-agent sessions nested in them. */
export async function rolledUpUsageForTrees(sql: SqlClient, rootIds: readonly string[]): Promise<(UsageCounts & { rootId: string })[]> {
  return sql.query(
    `${agentTree(`SELECT m."rootId", m.id, 0 FROM "Session" m WHERE m."rootId" = ANY($1::text[])`)}
     SELECT tree.top AS "rootId", ${TURN_SUMS} FROM tree JOIN "Turn" t ON t."sessionId" = tree.sid GROUP BY tree.top`,
    [rootIds],
  );
}
