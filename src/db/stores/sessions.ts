/**
 * The statements on the `Session` table: row locks, the fork INSERT (plain SQL, on the fork's hot
 * path), the reads by id, and the Prisma writes of the other mutations. The assembly read and the
 * sub-session reads have files of their own (re-exported here).
 */
import type { LineageSession } from '../../domain/lineage.js';
import type { Message, Prisma, Session } from '../../generated/prisma/client.js';
import { asSql, SqlParams, type SqlClient, type SqlTarget, type Tx } from '../sql.js';
import { columnList, DEFAULT, insertSql, type ColumnSet, type InsertShape } from './columns.js';
import { MESSAGE_COLUMNS } from './messages.js';
import { SESSION_SQL } from './session-columns.js';

const LOCKED_COLUMNS = {
  id: true,
  workspaceId: true,
  rootId: true,
  parentId: true,
  ancestorIds: true,
  depth: true,
  forkIndex: true,
  messageCount: true,
  compactionCount: true,
  transformCount: true,
  lineage: true,
  title: true,
  settings: true,
  metadata: true,
} as const satisfies Partial<ColumnSet<Session>>;
const LOCKED_SQL = columnList(LOCKED_COLUMNS);

/** The columns a locked session row carries through a write. */
export type LockedSession = Pick<Session, keyof typeof LOCKED_COLUMNS> & LineageSession;

/** Locks the session row (`SELECT … FOR UPDATE`); null when the workspace has no such session. */
export async function lockSession(db: SqlTarget, workspaceId: string, sessionId: string): Promise<LockedSession | null> {
  const [row] = await asSql(db).query<LockedSession>(
    `SELECT ${LOCKED_SQL} FROM "Session" WHERE id = $1 AND "workspaceId" = $2 FOR UPDATE`,
    [sessionId, workspaceId],
  );
  return row ?? null;
}

/** Locks the root of the session's fork tree, in one statement; null when there is no such session. */
export async function lockTreeRoot(db: SqlTarget, workspaceId: string, sessionId: string): Promise<LockedSession | null> {
  const [row] = await asSql(db).query<LockedSession>(
    `SELECT ${LOCKED_SQL} FROM "Session"
     WHERE id = (SELECT "rootId" FROM "Session" WHERE id = $1 AND "workspaceId" = $2) FOR UPDATE`,
    [sessionId, workspaceId],
  );
  return row ?? null;
}

/**
 * What a new fork row holds; the counters, the active turn and `updatedAt` start at their defaults.
 * A fork's kind is FORK; it runs in no parent turn (a fork of a sub-session is a FORK of it, not a
 * sub-session of the turn). Its `branchAnchorId` is derived in the INSERT from `forkPointMessageId`.
 */
export type NewFork = Omit<
  Session,
  | 'branchAnchorId'
  | 'eventSequence'
  | 'compactionCount'
  | 'transformCount'
  | 'turnCount'
  | 'activeTurnId'
  | 'updatedAt'
  | 'kind'
  | 'parentTurnId'
  | 'parentMessageCount'
  | 'agentId'
>;

/** The fork INSERT: every column of `Session` is written or deliberately left to its default. */
export function forkInsert(fork: NewFork, params: SqlParams): InsertShape<Session> {
  const createdAt = params.add(fork.createdAt.toISOString(), '::timestamp(3)');
  return {
    table: 'Session',
    values: {
      id: params.add(fork.id),
      workspaceId: params.add(fork.workspaceId),
      title: params.add(fork.title),
      settings: params.add(JSON.stringify(fork.settings), '::jsonb'),
      metadata: params.add(JSON.stringify(fork.metadata), '::jsonb'),
      parentId: params.add(fork.parentId),
      rootId: params.add(fork.rootId),
      ancestorIds: params.add(fork.ancestorIds, '::text[]'),
      depth: params.add(fork.depth),
      forkIndex: params.add(fork.forkIndex),
      forkPointMessageId: params.add(fork.forkPointMessageId),
      branchAnchorId: branchAnchorSql(params.add(fork.forkPointMessageId)),
      lineage: params.add(JSON.stringify(fork.lineage), '::jsonb'),
      kind: `'FORK'`,
      parentTurnId: DEFAULT,
      parentMessageCount: DEFAULT,
      agentId: DEFAULT,
      messageCount: params.add(fork.messageCount),
      eventSequence: DEFAULT,
      compactionCount: DEFAULT,
      transformCount: DEFAULT,
      turnCount: DEFAULT,
      activeTurnId: DEFAULT,
      createdAt,
      updatedAt: createdAt,
    },
  };
}

/**
 * The alternatives anchor of a fork cut at message `cut` (a parameter): the anchor of the session
 * that wrote `cut` when `cut` is that session's first own message (it is itself an alternative),
 * else `cut`. One primary-key read, in the INSERT (the migration `branch_anchors` backfills the
 * same rule).
 */
export function branchAnchorSql(cut: string): string {
  return `COALESCE((SELECT o."branchAnchorId" FROM "Message" am JOIN "Session" o ON o.id = am."sessionId"
     WHERE am.id = ${cut}::text AND o."forkIndex" = am.position), ${cut}::text)`;
}

/** Inserts a fork in one statement (plain SQL: the fork's latency target). */
export async function insertFork(sql: SqlClient, fork: NewFork): Promise<Session> {
  const params = new SqlParams();
  const [row] = await sql.query<Session>(`${insertSql(forkInsert(fork, params))} RETURNING ${SESSION_SQL}`, params.values);
  return row;
}

export function createSession(tx: Tx, data: Prisma.SessionUncheckedCreateInput): Promise<Session> {
  return tx.session.create({ data });
}

export function updateSession(tx: Tx, id: string, data: Prisma.SessionUncheckedUpdateInput): Promise<Session> {
  return tx.session.update({ where: { id }, data });
}

/** Every fork below `sessionId`, deepest first. */
export function findDescendants(tx: Tx, sessionId: string): Promise<{ id: string; depth: number }[]> {
  return tx.session.findMany({ where: { ancestorIds: { has: sessionId } }, select: { id: true, depth: true }, orderBy: { depth: 'desc' } });
}

/**
 * Deletes the sessions (their messages, turns, events and compactions go with them); returns each
 * one's last event sequence (its live-only SessionDeleted comes after it).
 */
export async function deleteSessions(tx: Tx, ids: string[]): Promise<{ id: string; eventSequence: number }[]> {
  return tx.$queryRawUnsafe('DELETE FROM "Session" WHERE id = ANY($1::text[]) RETURNING id, "eventSequence"', ids);
}

/**
 * One trailing " (fork N)", end-anchored, capturing N: the SQL regex of domain/fork-title.ts's rule.
 * The migration that made the `forkNumber` and `forkTitleBaseHash` columns generates them with this
 * pattern (test/integration/forks.test.ts checks that they agree with the TypeScript rule).
 */
export const FORK_SUFFIX_SQL = ' \\(fork ([0-9]+)\\)$';

/**
 * The SQL of the highest fork number of `base` in the tree of `rootId` (a scalar subquery): one
 * seek of the (rootId, forkTitleBaseHash, forkNumber) index, whatever the tree's size. The hash
 * finds the candidates, the base itself is compared too, so an md5 collision cannot count.
 */
export function highestForkNumberSql(params: SqlParams, rootId: string, base: string): string {
  const b = params.add(base);
  return `(SELECT s."forkNumber"::text FROM "Session" s
     WHERE s."rootId" = ${params.add(rootId)} AND s."forkTitleBaseHash" = decode(md5(${b}::text), 'hex')
       AND s."forkNumber" IS NOT NULL AND regexp_replace(s.title, ${params.add(FORK_SUFFIX_SQL)}, '') = ${b}
     ORDER BY s."forkNumber" DESC LIMIT 1)`;
}

/**
 * Sessions by id within a workspace (the request loaders), in plain SQL: the read behind
 * `session(id)`, `ancestors` and events' `session`, the most frequent read of all.
 */
export function findSessions(sql: SqlClient, workspaceId: string, ids: readonly string[]): Promise<Session[]> {
  // Named: every read of a session (the loaders') runs it, and PostgreSQL then only binds it.
  return sql.query<Session>(SESSIONS_BY_IDS_SQL, [[...ids], workspaceId], { name: 'sg_sessions_by_ids' });
}

const SESSIONS_BY_IDS_SQL = `SELECT ${SESSION_SQL} FROM "Session" WHERE id = ANY($1::text[]) AND "workspaceId" = $2`;

/** Whether the session exists in the workspace (a subscription's check before it streams). */
export async function sessionInWorkspace(sql: SqlClient, workspaceId: string, sessionId: string): Promise<boolean> {
  return (await sql.query('SELECT 1 FROM "Session" WHERE id = $1 AND "workspaceId" = $2', [sessionId, workspaceId])).length > 0;
}

/** Forks cut at any of these messages, oldest first. */
export function findForksAt(db: Tx, workspaceId: string, messageIds: readonly string[]): Promise<Session[]> {
  return db.session.findMany({ where: { forkPointMessageId: { in: [...messageIds] }, workspaceId }, orderBy: { id: 'asc' } });
}

/**
 * Everything a fork needs to know about its cut, in one statement: the message at the cut (by
 * index, owned by `owner`, or by id), the first still-generating message of the parent's own
 * before it, and the highest fork number already used with the title's base in the tree.
 */
export async function readForkPoint(
  sql: SqlClient,
  parent: Pick<LockedSession, 'id' | 'forkIndex' | 'rootId'>,
  at: { owner: string | null; index: number } | { messageId: string },
  base: string,
): Promise<{ message: Message; generatingAt: number | null; highestFork: string | null } | null> {
  const p = new SqlParams();
  const generatingAt = `(SELECT min(g.position) FROM "Message" g
       WHERE g."sessionId" = ${p.add(parent.id)} AND g.generating AND g.position >= ${p.add(parent.forkIndex ?? 0)} AND g.position < m.position)`;
  const highestFork = highestForkNumberSql(p, parent.rootId, base);
  const where = 'index' in at ? `m."sessionId" = ${p.add(at.owner)} AND m.position = ${p.add(at.index)}` : `m.id = ${p.add(at.messageId)}`;
  const [row] = await sql.query<Message & { generatingAt: number | null; highestFork: string | null }>(
    `SELECT ${columnList(MESSAGE_COLUMNS, 'm')}, ${generatingAt} AS "generatingAt", ${highestFork} AS "highestFork"
     FROM "Message" m WHERE ${where}`,
    p.values,
  );
  if (!row) return null;
  const { generatingAt: at0, highestFork: highest, ...message } = row;
  return { message, generatingAt: at0 === null ? null : Number(at0), highestFork: highest };
}

/** The session's last event sequence and the turn it runs in (a sub-session's), read under its lock. */
export async function readEventHead(
  db: SqlTarget,
  sessionId: string,
): Promise<{ eventSequence: number; parentTurnId: string | null } | null> {
  const [row] = await asSql(db).query<{ eventSequence: number; parentTurnId: string | null }>(
    'SELECT "eventSequence", "parentTurnId" FROM "Session" WHERE id = $1',
    [sessionId],
  );
  return row ? { eventSequence: Number(row.eventSequence), parentTurnId: row.parentTurnId } : null;
}

/** The session a turn of the workspace belongs to, and the turn's status; null when there is no such turn. */
export async function findTurnSession(
  db: SqlTarget,
  workspaceId: string,
  turnId: string,
): Promise<{ sessionId: string; status: string } | null> {
  const [row] = await asSql(db).query<{ sessionId: string; status: string }>(
    `SELECT t."sessionId", t.status::text AS status FROM "Turn" t JOIN "Session" s ON s.id = t."sessionId"
     WHERE t.id = $1 AND s."workspaceId" = $2`,
    [turnId, workspaceId],
  );
  return row ?? null;
}
