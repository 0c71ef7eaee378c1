/**
 * Every statement on the `Session` table: row locks, the fork INSERT (plain SQL, on the fork's hot
 * path), the assembly read (the session with what its turns say and, for a known session, its
 * compaction and newest messages, in one statement), and the Prisma writes of the other mutations.
 */
import type { LineageSession } from '../../domain/lineage.js';
import type { Message, Prisma, Session } from '../../generated/prisma/client.js';
import { asSql, SqlParams, type SqlClient, type SqlTarget, type Tx } from '../sql.js';
import { columnList, DEFAULT, insertSql, type ColumnSet, type InsertShape } from './columns.js';
import { COMPACTION_ROW_COLUMNS, latestCompactionSql, type CompactionRow } from './compactions.js';
import { LIGHT_SQL, MESSAGE_COLUMNS, type LightRow } from './messages.js';

/** Every column of a session row, for RETURNING and reads that decode a whole `Session`. */
export const SESSION_COLUMNS: ColumnSet<Session> = {
  id: true,
  workspaceId: true,
  title: true,
  settings: true,
  metadata: true,
  parentId: true,
  rootId: true,
  ancestorIds: true,
  depth: true,
  forkIndex: true,
  forkPointMessageId: true,
  lineage: true,
  kind: true,
  parentTurnId: true,
  parentMessageCount: true,
  agentId: true,
  messageCount: true,
  eventSequence: true,
  compactionCount: true,
  transformCount: true,
  turnCount: true,
  activeTurnId: true,
  createdAt: true,
  updatedAt: true,
};
const SESSION_SQL = columnList(SESSION_COLUMNS);

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
 * sub-session of the turn).
 */
export type NewFork = Omit<
  Session,
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
 * What follows a base in a title of that base: exactly " (fork N)", capturing N. The SQL regex of
 * domain/fork-title.ts's rule (test/integration/forks.test.ts checks both agree).
 */
export const FORK_NUMBER_AFTER_BASE_SQL = '^ \\(fork ([0-9]+)\\)$';

/** The SQL of the highest fork number of `base` in the tree of `rootId` (a scalar subquery). */
export function highestForkNumberSql(params: SqlParams, rootId: string, base: string): string {
  const b = params.add(base);
  return `(SELECT max(substring(substr(s.title, char_length(${b}) + 1) FROM ${params.add(FORK_NUMBER_AFTER_BASE_SQL)})::numeric)::text
     FROM "Session" s WHERE s."rootId" = ${params.add(rootId)} AND starts_with(s.title, ${b}))`;
}

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
};

/**
 * The session, whether it had a turn before this one, and the settings fingerprint recorded with
 * the latest earlier context (a fork with no context of its own compares with its parent's latest),
 * in one statement. For a known session (`known`: its lineage, frozen when it was made) the same
 * statement reads its compaction and its newest messages from `known.from` on, at most
 * `known.newest` of them (none: not read).
 */
export async function readAssemblyState(
  sql: SqlClient,
  workspaceId: string,
  sessionId: string,
  turnId: string | null,
  known: { session: Pick<LineageSession, 'id' | 'lineage'>; from: number; newest: number } | null,
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
  const [row] = await sql.query<Session & Omit<AssemblyState, 'known'> & { compaction?: CompactionRow | null; newest?: LightRow[] }>(
    `SELECT ${columnList(SESSION_COLUMNS, 's')},
       EXISTS (SELECT 1 FROM "Turn" t WHERE t."sessionId" = s.id AND t.id IS DISTINCT FROM ${turn}) AS "hadTurn",
       (${turn}::text IS NULL OR EXISTS (SELECT 1 FROM "Turn" t WHERE t.id = ${turn} AND t."sessionId" = s.id)) AS "turnFound",
       coalesce(
         (SELECT t."contextSettingsFingerprint" FROM "Turn" t
           WHERE t."sessionId" = s.id AND t."contextSettingsFingerprint" IS NOT NULL AND t.id IS DISTINCT FROM ${turn}
           ORDER BY t.number DESC LIMIT 1),
         (SELECT t."contextSettingsFingerprint" FROM "Turn" t
           WHERE t."sessionId" = s."parentId" AND t."contextSettingsFingerprint" IS NOT NULL
           ORDER BY t.number DESC LIMIT 1)
       ) AS "previousFingerprint",
       coalesce(
         (SELECT t."contextHistoryMark" FROM "Turn" t
           WHERE t."sessionId" = s.id AND t."contextHistoryMark" IS NOT NULL AND t.id IS DISTINCT FROM ${turn}
           ORDER BY t.number DESC LIMIT 1),
         (SELECT t."contextHistoryMark" FROM "Turn" t
           WHERE t."sessionId" = s."parentId" AND t."contextHistoryMark" IS NOT NULL
           ORDER BY t.number DESC LIMIT 1)
       ) AS "previousHistoryMark"${compaction}${newest}
     FROM "Session" s WHERE s.id = ${id} AND s."workspaceId" = ${workspace}`,
    p.values,
  );
  if (!row) return null;
  const { compaction: readCompaction, newest: readNewest, ...session } = row;
  if (!known) return { ...session, known: null };
  return {
    ...session,
    known: {
      compaction: readCompaction ?? null,
      newest: { from: Math.max(known.from, session.messageCount - known.newest), rows: readNewest ?? [] },
    },
  };
}

/**
 * Sessions by id within a workspace (the request loaders), in plain SQL: the read behind
 * `session(id)`, `ancestors` and events' `session`, where Prisma's per-statement cost was larger
 * than the statement's.
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
 */
export async function readAgentTree(db: SqlTarget, sessionId: string, maxDepth: number, limit: number): Promise<AgentTreeRow[]> {
  const rows = await asSql(db).query<AgentTreeRow>(
    `WITH RECURSIVE tree(id, parent_session, anchor, count, created, depth) AS (
       SELECT s.id, NULL::text, 0, s."messageCount", s."createdAt", 0 FROM "Session" s WHERE s.id = $1
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
