/**
 * Usage read back from turns and their reports: per model, per session, per fork tree, and rolled
 * up over the sub-agent sessions nested in a turn. Plain sums at read time, nothing maintained.
 */
import type { CostSource, UsageCounts } from '../../domain/turns.js';
import type { SqlClient } from '../sql.js';
import { MAX_SUB_SESSION_DEPTH } from './events.js';

/** Sums of usage with the weakest source of their cost (null: no report). */
export interface SummedUsage extends UsageCounts {
  costSource: CostSource | null;
}

export interface ModelUsage extends SummedUsage {
  model: string | null;
}

/**
 * The five usage sums over the rows aliased `alias` (zero when there are none), and `costSource`:
 * the weakest source among the reports summed (`source`, an expression per row). CostSource is
 * declared REPORTED, CATALOG, UNKNOWN, so the enum's max is the weakest.
 */
const usageSums = (alias: string, source: string) =>
  `coalesce(sum(${alias}."inputTokens"), 0)::bigint AS "inputTokens", coalesce(sum(${alias}."outputTokens"), 0)::bigint AS "outputTokens",
  coalesce(sum(${alias}."cacheReadTokens"), 0)::bigint AS "cacheReadTokens", coalesce(sum(${alias}."cacheWriteTokens"), 0)::bigint AS "cacheWriteTokens",
  coalesce(sum(${alias}.cost), 0)::float8 AS cost, max(${source})::text AS "costSource"`;
/** Over report rows `r`. */
const SUMS = usageSums('r', 'r."costSource"');
/** Over turn rows `t` (their counters), each turn's source read from its reports. */
const TURN_SUMS = usageSums('t', `(SELECT max(x."costSource") FROM "TurnUsageReport" x WHERE x."turnId" = t.id)`);

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

/** Usage over each session's own turns. */
export async function usageForSessions(sql: SqlClient, sessionIds: readonly string[]): Promise<(SummedUsage & { sessionId: string })[]> {
  return sql.query(`SELECT t."sessionId", ${TURN_SUMS} FROM "Turn" t WHERE t."sessionId" = ANY($1::text[]) GROUP BY t."sessionId"`, [
    sessionIds,
  ]);
}

/** Usage over every turn of each fork tree (by root id). */
export async function usageForTrees(sql: SqlClient, rootIds: readonly string[]): Promise<(SummedUsage & { rootId: string })[]> {
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
export async function rolledUpUsageForTurns(sql: SqlClient, turnIds: readonly string[]): Promise<(SummedUsage & { turnId: string })[]> {
  return sql.query(
    `${agentTree(`SELECT s."parentTurnId", s.id, 1 FROM "Session" s WHERE s."parentTurnId" = ANY($1::text[])`)}
     SELECT t.top AS "turnId", ${TURN_SUMS} FROM (
       SELECT own.id AS top, own.id, own."inputTokens", own."outputTokens", own."cacheReadTokens", own."cacheWriteTokens", own.cost
       FROM "Turn" own WHERE own.id = ANY($1::text[])
       UNION ALL
       SELECT tree.top, n.id, n."inputTokens", n."outputTokens", n."cacheReadTokens", n."cacheWriteTokens", n.cost
       FROM tree JOIN "Turn" n ON n."sessionId" = tree.sid
     ) t GROUP BY t.top`,
    [turnIds],
  );
}

/** Usage over the turns of each `top` of `base` and of the sub-agent sessions nested in them, the top named `key`. */
function rolledUpOverTree<K extends string>(
  sql: SqlClient,
  key: K,
  base: string,
  ids: readonly string[],
): Promise<(SummedUsage & Record<K, string>)[]> {
  return sql.query(
    `${agentTree(base)}
     SELECT tree.top AS "${key}", ${TURN_SUMS} FROM tree JOIN "Turn" t ON t."sessionId" = tree.sid GROUP BY tree.top`,
    [ids],
  );
}

/** Usage over each session's turns, with what the sub-agent sessions nested in them spent. */
export const rolledUpUsageForSessions = (sql: SqlClient, sessionIds: readonly string[]) =>
  rolledUpOverTree(sql, 'sessionId', 'SELECT x, x, 0 FROM unnest($1::text[]) AS x', sessionIds);

/** Usage over every turn of each fork tree (by root id), with the sub-agent sessions nested in them. */
export const rolledUpUsageForTrees = (sql: SqlClient, rootIds: readonly string[]) =>
  rolledUpOverTree(sql, 'rootId', `SELECT m."rootId", m.id, 0 FROM "Session" m WHERE m."rootId" = ANY($1::text[])`, rootIds);

/**
 * The sub-agent sessions a fork's timeline inherits (see sub-sessions.ts, `INHERITED_SUB_SESSIONS`):
 * one (top, sid, 1) row per sub-session made in a turn of an ancestor the fork's lineage sees
 * before the cut. Their nested sub-sessions are added by `agentTree`.
 */
const INHERITED_BASE = `SELECT top.id, s.id, 1 FROM "Session" top
    CROSS JOIN LATERAL jsonb_array_elements(top.lineage) e
    JOIN "Turn" pt ON pt."sessionId" = e->>'sessionId'
    JOIN "Session" s ON s."parentTurnId" = pt.id
    WHERE top.id = ANY($1::text[]) AND coalesce(s."parentMessageCount", 0) <= (e->>'end')::int`;

/**
 * Usage of the sub-agent sessions each fork inherits from its ancestors (shared, not copied): part
 * of the fork tree's usage once (they run in an ancestor's turns), never of the fork's own.
 */
export const inheritedUsageForSessions = (sql: SqlClient, sessionIds: readonly string[]) =>
  rolledUpOverTree(sql, 'sessionId', INHERITED_BASE, sessionIds);

/**
 * The weakest cost source of the reports of each turn, per agent (null agentId rows never occur:
 * every report names its agent). A turn or agent without reports has no row.
 */
export function costSourcesOfTurns(
  sql: SqlClient,
  turnIds: readonly string[],
): Promise<{ turnId: string; agentId: string; costSource: CostSource }[]> {
  return sql.query(
    `SELECT r."turnId", r."agentId", max(r."costSource")::text AS "costSource" FROM "TurnUsageReport" r
     WHERE r."turnId" = ANY($1::text[]) GROUP BY r."turnId", r."agentId"`,
    [turnIds],
  );
}
