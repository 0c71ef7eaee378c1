/**
 * Recording a usage report: the report row, the agent's and the turn's sums and the
 * TURN_USAGE_UPDATED event (with its sub-session wrappers), in one statement.
 */
import type { CostSource, UsageCounts } from '../../domain/turns.js';
import type { SessionEvent, Turn, TurnUsageReport } from '../../generated/prisma/client.js';
import type { SessionEventMessage } from '../session-events.js';
import type { SqlClient } from '../sql.js';
import { DEFAULT, insertSelectSql, type InsertShape } from './columns.js';
import { subSessionWrapperCtes, wrapperMessage } from './events.js';

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
    costSource: '$15::"CostSource"',
    createdAt: '$11::timestamp(3)',
  },
};

/**
 * A usage object from the row aliased `alias`, with `costSource`: the weakest of this report's ($15)
 * and those of the earlier reports matching `reports` (a condition on TurnUsageReport `x`; the
 * report inserted by this statement is not visible to it).
 */
const usageObject = (alias: string, reports: string) =>
  `jsonb_build_object('inputTokens', ${alias}."inputTokens", 'outputTokens', ${alias}."outputTokens",
     'cacheReadTokens', ${alias}."cacheReadTokens", 'cacheWriteTokens', ${alias}."cacheWriteTokens", 'cost', ${alias}.cost,
     'costSource', greatest($15::"CostSource", (SELECT max(x."costSource") FROM "TurnUsageReport" x WHERE ${reports})))`;

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
             'cacheWriteTokens', $9::bigint, 'cost', $10::float8, 'costSource', $15::text),
           'total', ${usageObject('t', 'x."turnId" = $2')}, 'agentTotal', ${usageObject('a', 'x."turnId" = $2 AND x."agentId" = $4')})`,
    createdAt: '$11::timestamp(3)',
    lastSequence: DEFAULT,
  },
};

export interface RecordedUsage {
  turn: Turn;
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
    /** Where `usage.cost` comes from. */
    costSource: CostSource;
    maxTotal: number;
    now: Date;
  },
): Promise<(RecordedUsage & { sessionId: string }) | null> {
  const u = report.usage;
  const [row] = await sql.query<
    Turn & {
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
    report.now.toISOString(),
    report.workspaceId,
    report.eventId,
    report.maxTotal,
    report.costSource,
  ]);
  if (!row) return null;
  const { agentTotal, event, wrappers, ...turn } = row;
  return {
    turn: turn as Turn,
    wrappers: wrappers.map((w) => wrapperMessage(w, report.now.toISOString())),
    agentTotal: {
      inputTokens: BigInt(agentTotal.inputTokens),
      outputTokens: BigInt(agentTotal.outputTokens),
      cacheReadTokens: BigInt(agentTotal.cacheReadTokens),
      cacheWriteTokens: BigInt(agentTotal.cacheWriteTokens),
      cost: Number(agentTotal.cost),
    },
    sessionId: (turn as Turn).sessionId,
    event: { ...event, sequence: Number(event.sequence), createdAt: report.now },
  };
}
