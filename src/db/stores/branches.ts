/**
 * The reads of `Message.alternatives`: the messages at one index after one shared prefix, found
 * through `Session.branchAnchorId` (see prisma/schema.prisma) with index probes only, never a walk
 * of the fork tree.
 */
import type { Message } from '../../generated/prisma/client.js';
import type { SqlClient } from '../sql.js';
import { MESSAGE_SQL } from './messages.js';

/** One alternative, light: what paging and the content bound need before any content is read. */
export interface AlternativeMember {
  id: string;
  sessionId: string;
  contentBytes: number | null;
}

/**
 * The alternatives of each message (of the workspace), each list in creation order (by id): the
 * group's anchor (the message itself when it is not the first message of a fork cut at its index,
 * else that fork's anchor), then the message at that index of every session anchored there. A
 * fork with no message there yet has none. Per message: a primary-key read, one range of the
 * (branchAnchorId, id) index, one (sessionId, position) probe per branch.
 */
export async function readAlternatives(
  sql: SqlClient,
  workspaceId: string,
  messageIds: readonly string[],
): Promise<Map<string, AlternativeMember[]>> {
  const rows = await sql.query<AlternativeMember & { forId: string }>(
    // One lateral per message, so each probe is parameterized by that message's anchor and position
    // (a CTE joined twice let the planner drop the position from the (sessionId, position) probe).
    `SELECT m.id AS "forId", a.id, a."sessionId", a."contentBytes"
     FROM "Message" m
     JOIN "Session" o ON o.id = m."sessionId" AND o."workspaceId" = $2
     CROSS JOIN LATERAL (
       SELECT CASE WHEN o."forkIndex" = m.position AND o."branchAnchorId" IS NOT NULL THEN o."branchAnchorId" ELSE m.id END AS anchor
     ) k
     JOIN LATERAL (
       SELECT an.id, an."sessionId", an."contentBytes" FROM "Message" an WHERE an.id = k.anchor
       UNION ALL
       SELECT x.id, x."sessionId", x."contentBytes"
       FROM "Session" s JOIN "Message" x ON x."sessionId" = s.id AND x.position = m.position
       WHERE s."branchAnchorId" = k.anchor
     ) a ON true
     WHERE m.id = ANY($1::text[])
     ORDER BY 1, 2`,
    [[...messageIds], workspaceId],
  );
  const groups = new Map<string, AlternativeMember[]>();
  for (const { forId, ...member } of rows) {
    const group = groups.get(forId);
    if (group) group.push(member);
    else groups.set(forId, [member]);
  }
  return groups;
}

/** Whole message rows by id (any order; a deleted one is left out). */
export function readMessagesById(sql: SqlClient, ids: readonly string[]): Promise<Message[]> {
  return sql.query<Message>(`SELECT ${MESSAGE_SQL} FROM "Message" WHERE id = ANY($1::text[])`, [[...ids]]);
}
