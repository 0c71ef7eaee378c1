/**
 * The sub-agent sessions nested in a session's turns: the agent tree, what a delete takes with it
 * (found and locked), and how deep a session is nested.
 */
import { asSql, type SqlTarget } from '../sql.js';

/** What the agent-tree read gives per session (see `readAgentTree`). */
export interface AgentTreeRow {
  id: string;
  parentSessionId: string | null;
  parentMessageCount: number;
  messageCount: number;
  depth: number;
}

/**
 * The session and every sub-agent session nested below it (in its turns, their turns, …, at most
 * `maxDepth` levels), oldest first, at most `limit` rows: the timeline's shape, in one statement.
 * A fork also holds the sub-sessions its ancestors made before its cut (cagent's fork carries
 * them): those made in a turn of an ancestor its lineage sees, when that ancestor had at most the
 * messages the fork sees of it (`parentMessageCount <= end`: made before the message at the cut
 * existed, so never one made after the fork). They are shared, not copied, and sit at their
 * position (positions are the same in every session that sees them), as children of the fork.
 */
export async function readAgentTree(db: SqlTarget, sessionId: string, maxDepth: number, limit: number): Promise<AgentTreeRow[]> {
  const rows = await asSql(db).query<AgentTreeRow>(
    `WITH RECURSIVE tree(id, parent_session, anchor, count, created, depth) AS (
       SELECT s.id, NULL::text, 0, s."messageCount", s."createdAt", 0 FROM "Session" s WHERE s.id = $1
       UNION ALL
       SELECT s.id, top.id, coalesce(s."parentMessageCount", 0), s."messageCount", s."createdAt", 1
       FROM "Session" top
       CROSS JOIN LATERAL jsonb_array_elements(top.lineage) e
       JOIN "Turn" pt ON pt."sessionId" = e->>'sessionId'
       JOIN "Session" s ON s."parentTurnId" = pt.id
       WHERE top.id = $1 AND coalesce(s."parentMessageCount", 0) <= (e->>'end')::int AND $2 > 0
       UNION ALL
       SELECT s.id, t."sessionId", coalesce(s."parentMessageCount", 0), s."messageCount", s."createdAt", tree.depth + 1
       FROM tree JOIN "Turn" t ON t."sessionId" = tree.id JOIN "Session" s ON s."parentTurnId" = t.id
       WHERE tree.depth < $2
     )
     SELECT id, parent_session AS "parentSessionId", anchor AS "parentMessageCount", count AS "messageCount", depth
     FROM tree ORDER BY depth = 0 DESC, created, id LIMIT $3`,
    [sessionId, maxDepth, limit],
  );
  return rows.map((r) => ({
    ...r,
    parentMessageCount: Number(r.parentMessageCount),
    messageCount: Number(r.messageCount),
    depth: Number(r.depth),
  }));
}

/**
 * The sessions a delete of `ids` takes with it beyond `ids`: every sub-agent session nested in
 * their turns (recursively) and every fork of those sub-sessions (a sub-session is the root of its
 * own fork tree), in one statement.
 */
export async function findNestedSubSessions(db: SqlTarget, ids: readonly string[]): Promise<{ id: string }[]> {
  return asSql(db).query<{ id: string }>(
    `WITH RECURSIVE doomed(id) AS (
       SELECT unnest($1::text[])
       UNION
       SELECT member.id FROM doomed d
       JOIN "Turn" t ON t."sessionId" = d.id
       JOIN "Session" sub ON sub."parentTurnId" = t.id
       JOIN "Session" member ON member."rootId" = sub.id
     )
     SELECT d.id FROM doomed d WHERE NOT (d.id = ANY($1::text[]))`,
    [ids],
  );
}

/**
 * The sub-sessions (and their forks) nested under `ids`, locked (`FOR UPDATE`, in id order). Read
 * again after each lock until the set stops growing: a sub-session or fork made under one of them
 * meanwhile is found and locked too, and none can be made under a locked one until the caller ends.
 */
export async function lockNestedSubSessions(db: SqlTarget, ids: readonly string[]): Promise<{ id: string }[]> {
  const sql = asSql(db);
  let nested = await findNestedSubSessions(sql, ids);
  for (;;) {
    if (nested.length === 0) return nested;
    await sql.query('SELECT id FROM "Session" WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [nested.map((n) => n.id)]);
    const locked = new Set(nested.map((n) => n.id));
    const again = await findNestedSubSessions(sql, ids);
    if (again.every((n) => locked.has(n.id))) return again;
    nested = again;
  }
}

/** How many sub-session levels a session is below its top (0 for a session that is not a sub-session). */
export async function subSessionDepth(db: SqlTarget, sessionId: string, cap: number): Promise<number> {
  const [row] = await asSql(db).query<{ depth: number }>(
    `WITH RECURSIVE up(id, depth) AS (
       SELECT $1::text, 0
       UNION ALL
       SELECT t."sessionId", up.depth + 1 FROM up JOIN "Session" s ON s.id = up.id JOIN "Turn" t ON t.id = s."parentTurnId"
       WHERE up.depth < $2
     )
     SELECT max(depth) AS depth FROM up`,
    [sessionId, cap],
  );
  return Number(row?.depth ?? 0);
}
