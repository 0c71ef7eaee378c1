/**
 * Every statement on the `Compaction` table. Which compaction applies to a session: its own latest,
 * or else the latest inherited through its lineage (from the nearest ancestor that has one, among
 * those that existed when the lineage left it and end within what this session sees of it).
 */
import { compactionScopes, type LineageSession } from '../../domain/lineage.js';
import type { Compaction, Prisma } from '../../generated/prisma/client.js';
import { asSql, SqlParams, type SqlTarget, type Tx } from '../sql.js';
import type { ColumnSet } from './columns.js';

/** What assembly uses of the applicable compaction. */
export const COMPACTION_ROW_COLUMNS = {
  id: true,
  uptoIndex: true,
  summary: true,
  extractedContext: true,
  tokensO200k: true,
  tokensCl100k: true,
} as const satisfies Partial<ColumnSet<Compaction>>;
export type CompactionRow = Pick<Compaction, keyof typeof COMPACTION_ROW_COLUMNS>;

/** The latest compaction that applies to `session`, in one statement. */
export async function latestCompaction(db: SqlTarget, session: Pick<LineageSession, 'id' | 'lineage'>): Promise<Compaction | null> {
  const params = new SqlParams();
  const [row] = await asSql(db).query<Compaction>(latestCompactionSql(params, session), params.values);
  return row ?? null;
}

/** That statement, its parameters added to `params`: usable alone or as a subquery. */
export function latestCompactionSql(params: SqlParams, session: Pick<LineageSession, 'id' | 'lineage'>): string {
  const scopes = compactionScopes(session);
  const ids = params.add(
    scopes.map((s) => s.sessionId),
    '::text[]',
  );
  const ordinals = params.add(
    scopes.map((s) => s.maxOrdinal),
    '::int[]',
  );
  const uptos = params.add(
    scopes.map((s) => s.maxUpto),
    '::int[]',
  );
  return `SELECT c.* FROM unnest(${ids}, ${ordinals}, ${uptos}) WITH ORDINALITY AS s(session_id, max_ordinal, max_upto, depth)
       CROSS JOIN LATERAL (
         SELECT * FROM "Compaction" c
         WHERE c."sessionId" = s.session_id
           AND (s.max_ordinal IS NULL OR c.ordinal <= s.max_ordinal)
           AND (s.max_upto IS NULL OR c."uptoIndex" <= s.max_upto)
         ORDER BY c.ordinal DESC LIMIT 1
       ) c
       ORDER BY s.depth DESC LIMIT 1`;
}

export function createCompaction(tx: Tx, data: Prisma.CompactionUncheckedCreateInput): Promise<Compaction> {
  return tx.compaction.create({ data });
}
