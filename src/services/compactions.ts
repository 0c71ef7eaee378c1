/**
 * Which compaction applies to a session: its own latest, or else the latest inherited through its
 * lineage (from the nearest ancestor that has one, among those that existed when the lineage left
 * it and end within what this session sees of it). Read for context assembly.
 */
import { compactionScopes, type LineageSession } from '../domain/lineage.js';
import type { Compaction } from '../generated/prisma/client.js';
import { asSql, type SqlTarget } from './event-log.js';

/** The latest compaction that applies to `session`, in one statement. */
export async function latestCompaction(db: SqlTarget, session: Pick<LineageSession, 'id' | 'lineage'>): Promise<Compaction | null> {
  const [row] = await asSql(db).query<Compaction>(latestCompactionSql(1), compactionScopeValues(session));
  return row ?? null;
}

/**
 * That statement over the scope arrays of `compactionScopeValues` bound at $first, $first+1 and
 * $first+2: usable alone or as a subquery.
 */
export function latestCompactionSql(first: number): string {
  return `SELECT c.* FROM unnest($${first}::text[], $${first + 1}::int[], $${first + 2}::int[]) WITH ORDINALITY AS s(session_id, max_ordinal, max_upto, depth)
       CROSS JOIN LATERAL (
         SELECT * FROM "Compaction" c
         WHERE c."sessionId" = s.session_id
           AND (s.max_ordinal IS NULL OR c.ordinal <= s.max_ordinal)
           AND (s.max_upto IS NULL OR c."uptoIndex" <= s.max_upto)
         ORDER BY c.ordinal DESC LIMIT 1
       ) c
       ORDER BY s.depth DESC LIMIT 1`;
}

export function compactionScopeValues(session: Pick<LineageSession, 'id' | 'lineage'>): [string[], (number | null)[], (number | null)[]] {
  const scopes = compactionScopes(session);
  return [scopes.map((s) => s.sessionId), scopes.map((s) => s.maxOrdinal), scopes.map((s) => s.maxUpto)];
}
