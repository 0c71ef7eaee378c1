/**
 * The assembly read: the session with what its previous turns say and, for a known session, its
 * compaction and newest messages, in one statement.
 */
import type { LineageSession } from '../../domain/lineage.js';
import type { Session } from '../../generated/prisma/client.js';
import type { PayloadPrefix } from '../../domain/assembly/payload-prefix.js';
import { SqlParams, type SqlClient } from '../sql.js';
import { previousPrefixOf, previousPrefixSql, type PreviousPrefixColumns } from './assembly-prefixes.js';
import { columnList } from './columns.js';
import { COMPACTION_ROW_COLUMNS, latestCompactionSql, type CompactionRow } from './compactions.js';
import { LIGHT_SQL, type LightRow } from './messages.js';
import { SESSION_COLUMNS } from './session-columns.js';

/**
 * The latest non-null `column` of the session's turns other than `turn`, else of its parent's
 * turns (a fork with no turn of its own compares with its parent's latest), as a scalar subquery.
 */
const previousTurnValue = (column: string, turn: string) => `coalesce(
         (SELECT t."${column}" FROM "Turn" t
           WHERE t."sessionId" = s.id AND t."${column}" IS NOT NULL AND t.id IS DISTINCT FROM ${turn}
           ORDER BY t.number DESC LIMIT 1),
         (SELECT t."${column}" FROM "Turn" t
           WHERE t."sessionId" = s."parentId" AND t."${column}" IS NOT NULL
           ORDER BY t.number DESC LIMIT 1)
       )`;

/** The session and what its previous turns say, read in one statement (see `readAssemblyState`). */
export type AssemblyState = Session & {
  /** Whether the session has a turn other than the one being recorded. */
  hadTurn: boolean;
  /** Whether the turn to record the context on is a turn of this session (true when none is given). */
  turnFound: boolean;
  /** The settings fingerprint of the latest earlier recorded context, the session's own or else its parent's. */
  previousFingerprint: string | null;
  /** The history mark recorded with that same context (own, else the parent's latest): hasNewTransforms. */
  previousHistoryMark: number | null;
  /** For a known session, what was read with it. */
  known: { compaction: CompactionRow | null; newest: { from: number; rows: LightRow[] } } | null;
  /** The payload prefix of the session's last assembly in the format asked for (null: none, or no format asked). */
  previousPrefix: PayloadPrefix | null;
};

/**
 * The session, whether it had a turn before this one, and the settings fingerprint recorded with
 * the latest earlier context (a fork with no context of its own compares with its parent's latest),
 * in one statement. For a known session (`known`: its lineage, frozen when it was made) the same
 * statement reads its compaction and its newest messages from `known.from` on, at most
 * `known.newest` of them (none: not read); with a `format`, the payload prefix of its last
 * assembly in that format (stores/assembly-prefixes.ts).
 */
export async function readAssemblyState(
  sql: SqlClient,
  workspaceId: string,
  sessionId: string,
  turnId: string | null,
  known: { session: Pick<LineageSession, 'id' | 'lineage'>; from: number; newest: number } | null,
  format: string | null = null,
): Promise<AssemblyState | null> {
  const p = new SqlParams();
  const id = p.add(sessionId);
  const workspace = p.add(workspaceId);
  const turn = p.add(turnId);
  const compaction = known
    ? `,
         (SELECT row_to_json(c) FROM (SELECT ${columnList(COMPACTION_ROW_COLUMNS)} FROM (${latestCompactionSql(p, known.session)}) lc) c) AS compaction`
    : '';
  const newest =
    known && known.newest > 0
      ? `,
         (SELECT coalesce(json_agg(m ORDER BY m.position DESC), '[]'::json) FROM (
            SELECT ${LIGHT_SQL} FROM "Message"
            WHERE "sessionId" = s.id AND position >= greatest(${p.add(known.from)}::int, s."messageCount" - ${p.add(known.newest)}::int)
          ) m) AS newest`
      : '';
  const prefix =
    format === null
      ? ''
      : `,
       ${previousPrefixSql(p, 's', format)}`;
  const [row] = await sql.query<
    Session &
      Omit<AssemblyState, 'known' | 'previousPrefix'> &
      Partial<PreviousPrefixColumns> & { compaction?: CompactionRow | null; newest?: LightRow[] }
  >(
    `SELECT ${columnList(SESSION_COLUMNS, 's')},
       EXISTS (SELECT 1 FROM "Turn" t WHERE t."sessionId" = s.id AND t.id IS DISTINCT FROM ${turn}) AS "hadTurn",
       (${turn}::text IS NULL OR EXISTS (SELECT 1 FROM "Turn" t WHERE t.id = ${turn} AND t."sessionId" = s.id)) AS "turnFound",
       ${previousTurnValue('contextSettingsFingerprint', turn)} AS "previousFingerprint",
       ${previousTurnValue('contextHistoryMark', turn)} AS "previousHistoryMark"${compaction}${newest}${prefix}
     FROM "Session" s WHERE s.id = ${id} AND s."workspaceId" = ${workspace}`,
    p.values,
  );
  if (!row) return null;
  const { compaction: readCompaction, newest: readNewest, prefixHashes, prefixTokens, ...session } = row;
  const previousPrefix = previousPrefixOf({ prefixHashes: prefixHashes ?? null, prefixTokens: prefixTokens ?? null });
  if (!known) return { ...session, known: null, previousPrefix };
  return {
    ...session,
    previousPrefix,
    known: {
      compaction: readCompaction ?? null,
      newest: { from: Math.max(known.from, session.messageCount - known.newest), rows: readNewest ?? [] },
    },
  };
}
