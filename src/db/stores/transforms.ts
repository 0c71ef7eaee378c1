/**
 * Every statement on the `MessageTransform` table. Which transforms apply to a session: its
 * ancestors' (those that existed when its lineage left each one, on positions before what it sees
 * of it) and then its own, in replay order (domain/transforms.ts folds them).
 */
import { transformScopes, type LineageSession } from '../../domain/lineage.js';
import type { TransformRecord } from '../../domain/transforms.js';
import type { Message, MessageTransform } from '../../generated/prisma/client.js';
import { MESSAGE_SQL } from './messages.js';
import { asSql, SqlParams, type SqlTarget } from '../sql.js';
import { columnList, insertSql, type ColumnSet, type InsertShape } from './columns.js';

/** Every column of a transform row. */
export const TRANSFORM_COLUMNS: ColumnSet<MessageTransform> = {
  id: true,
  sessionId: true,
  ordinal: true,
  kind: true,
  messageId: true,
  position: true,
  reason: true,
  replacement: true,
  tokensO200k: true,
  tokensCl100k: true,
  createdAt: true,
};

type ScopedSession = Pick<LineageSession, 'id' | 'lineage'> & { transformCount: number };

/**
 * The transforms that apply to `session`, ancestors' first (root first), each session's in ordinal
 * order, in one statement; no statement at all when there is none to read.
 */
export async function readTransforms(db: SqlTarget, session: ScopedSession): Promise<TransformRecord[]> {
  const scopes = transformScopes(session);
  if (scopes.length === 0) return [];
  const p = new SqlParams();
  const ids = p.add(
    scopes.map((s) => s.sessionId),
    '::text[]',
  );
  const ordinals = p.add(
    scopes.map((s) => s.maxOrdinal),
    '::int[]',
  );
  const ends = p.add(
    scopes.map((s) => s.maxEnd),
    '::int[]',
  );
  const rows = await asSql(db).query<MessageTransform & { scopeEnd: number | null }>(
    `SELECT ${columnList(TRANSFORM_COLUMNS, 't')}, s.max_end AS "scopeEnd"
     FROM unnest(${ids}, ${ordinals}, ${ends}) WITH ORDINALITY AS s(session_id, max_ordinal, max_end, depth)
     JOIN "MessageTransform" t ON t."sessionId" = s.session_id
       AND (s.max_ordinal IS NULL OR t.ordinal <= s.max_ordinal)
       AND (s.max_end IS NULL OR t.kind = 'STRIP_TOOL_OUTPUTS' OR t.position < s.max_end)
     ORDER BY s.depth, t.ordinal`,
    p.values,
  );
  return rows.map((r) => ({
    kind: r.kind,
    messageId: r.messageId,
    position: r.position,
    reason: r.reason,
    replacement: r.replacement,
    tokens: r.tokensO200k === null || r.tokensCl100k === null ? null : { O200K_BASE: r.tokensO200k, CL100K_BASE: r.tokensCl100k },
    createdAt: r.createdAt,
    scopeEnd: r.scopeEnd,
  }));
}

/** Messages by id (within the workspace when one is given), in no particular order. */
export function findMessagesByIds(db: SqlTarget, ids: readonly string[], workspaceId?: string): Promise<Message[]> {
  const p = new SqlParams();
  const where = `id = ANY(${p.add(ids, '::text[]')})`;
  const inWorkspace =
    workspaceId === undefined
      ? ''
      : ` AND EXISTS (SELECT 1 FROM "Session" s WHERE s.id = m."sessionId" AND s."workspaceId" = ${p.add(workspaceId)})`;
  return asSql(db).query<Message>(`SELECT ${MESSAGE_SQL} FROM "Message" m WHERE ${where}${inWorkspace}`, p.values);
}

/** A new transform row: every column written. */
export type NewTransform = Omit<MessageTransform, 'createdAt'> & { createdAt: Date };

function transformInsert(row: NewTransform, p: SqlParams): InsertShape<MessageTransform> {
  return {
    table: 'MessageTransform',
    values: {
      id: p.add(row.id),
      sessionId: p.add(row.sessionId),
      ordinal: p.add(row.ordinal, '::int'),
      kind: p.add(row.kind, '::"MessageTransformKind"'),
      messageId: p.add(row.messageId),
      position: p.add(row.position, '::int'),
      reason: p.add(row.reason),
      replacement: p.add(row.replacement),
      tokensO200k: p.add(row.tokensO200k, '::int'),
      tokensCl100k: p.add(row.tokensCl100k, '::int'),
      createdAt: p.add(row.createdAt.toISOString(), '::timestamp(3)'),
    },
  };
}

/** The columns the INSERT writes (test/integration/store-columns.test.ts checks them). */
export const TRANSFORM_INSERT_COLUMNS = Object.keys(
  transformInsert(
    {
      id: '',
      sessionId: '',
      ordinal: 0,
      kind: 'HIDE',
      messageId: null,
      position: 0,
      reason: null,
      replacement: null,
      tokensO200k: null,
      tokensCl100k: null,
      createdAt: new Date(0),
    },
    new SqlParams(),
  ).values,
);

/** Inserts transforms of one session in one statement (the caller holds its row lock and numbers them). */
export async function insertTransforms(db: SqlTarget, rows: readonly NewTransform[]): Promise<void> {
  if (rows.length === 0) return;
  const p = new SqlParams();
  const [first, ...rest] = rows.map((row) => transformInsert(row, p));
  const tuple = (shape: InsertShape<MessageTransform>) => `(${Object.values(shape.values).join(', ')})`;
  await asSql(db).query(`${insertSql(first)}${rest.map((shape) => `, ${tuple(shape)}`).join('')}`, p.values);
}
