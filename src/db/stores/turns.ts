/**
 * Every statement on turns, their agents and their usage reports. Rows come back as Prisma would
 * give them (see db/sql.ts). Callers hold the session's row lock (`lockSession*`) for every write:
 * that one lock orders all changes to a session's turns, on one server or many.
 */
import type { TurnAgentStatus, TurnStatus } from '../../domain/turns.js';
import type { PrismaClient, Turn, TurnAgent } from '../../generated/prisma/client.js';
import type { SqlClient } from '../sql.js';
import { DEFAULT, insertSelectSql, insertSql, type InsertShape } from './columns.js';

export type TurnRow = Turn;

export interface AgentState {
  agentId: string;
  status: TurnAgentStatus;
  error: string | null;
}

/** A turn with its agents' states, read under the session's lock. */
export interface TurnWithAgents extends TurnRow {
  agents: AgentState[];
}

export interface LockedTurnSession {
  id: string;
  turnCount: number;
  activeTurnId: string | null;
}

const ts = (date: Date) => date.toISOString();

/** Locks a session of the workspace; null when there is none. */
export async function lockSession(sql: SqlClient, workspaceId: string, sessionId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>(
    'SELECT id, "turnCount", "activeTurnId" FROM "Session" WHERE id = $1 AND "workspaceId" = $2 FOR UPDATE',
    [sessionId, workspaceId],
  );
  return row ?? null;
}

/**
 * Locks the session a turn belongs to (when the turn is in the workspace); null when there is no
 * such turn. The turn itself is read afterwards, in a new statement, so it reflects every change
 * committed before the lock was granted.
 */
export async function lockSessionOfTurn(sql: SqlClient, workspaceId: string, turnId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>(
    `SELECT id, "turnCount", "activeTurnId" FROM "Session"
     WHERE id = (SELECT "sessionId" FROM "Turn" WHERE id = $1) AND "workspaceId" = $2 FOR UPDATE`,
    [turnId, workspaceId],
  );
  return row ?? null;
}

const WITH_AGENTS = `SELECT t.*, coalesce((
    SELECT json_agg(json_build_object('agentId', a."agentId", 'status', a.status, 'error', a.error) ORDER BY a."agentId")
    FROM "TurnAgent" a WHERE a."turnId" = t.id), '[]'::json) AS agents
  FROM "Turn" t`;

export async function readTurn(sql: SqlClient, turnId: string): Promise<TurnWithAgents | null> {
  const [row] = await sql.query<TurnWithAgents>(`${WITH_AGENTS} WHERE t.id = $1`, [turnId]);
  return row ?? null;
}

export async function findByClientTurnId(sql: SqlClient, sessionId: string, clientTurnId: string): Promise<TurnRow | null> {
  const [row] = await sql.query<TurnRow>('SELECT * FROM "Turn" WHERE "sessionId" = $1 AND "clientTurnId" = $2', [sessionId, clientTurnId]);
  return row ?? null;
}

const USAGE_DEFAULTS = {
  inputTokens: DEFAULT,
  outputTokens: DEFAULT,
  cacheReadTokens: DEFAULT,
  cacheWriteTokens: DEFAULT,
  cost: DEFAULT,
} as const;

/**
 * The INSERTs below, per column of their table (a new column is a type error here until it is
 * written or deliberately left to its default; test/integration/store-columns.test.ts checks the
 * same lists against the migrated tables). Values name insertTurn's parameters.
 */
export const TURN_INSERT: InsertShape<Turn> = {
  table: 'Turn',
  values: {
    id: '$1',
    sessionId: '$2',
    number: '$3',
    clientTurnId: '$4',
    status: `'ACTIVE'`,
    initiatorKind: '$5::"InitiatorKind"',
    initiatorId: '$6',
    ...USAGE_DEFAULTS,
    error: DEFAULT,
    context: DEFAULT,
    contextSettingsFingerprint: DEFAULT,
    contextHistoryMark: DEFAULT,
    startedAt: '$7::timestamp(3)',
    completedAt: DEFAULT,
    lastActivityAt: '$7::timestamp(3)',
  },
};

/** One row per agent id of `unnest($8) AS agent`. */
export const TURN_AGENT_INSERT: InsertShape<TurnAgent> = {
  table: 'TurnAgent',
  values: { turnId: '$1', agentId: 'agent', status: `'ACTIVE'`, ...USAGE_DEFAULTS, error: DEFAULT, completedAt: DEFAULT },
};

const INSERT_TURN_SQL = `WITH t AS (
       ${insertSql(TURN_INSERT)} RETURNING *
     ), a AS (
       ${insertSelectSql(TURN_AGENT_INSERT, 'FROM unnest($8::text[]) AS agent')}
     ), s AS (
       UPDATE "Session" SET "turnCount" = $3, "activeTurnId" = $1, "updatedAt" = $7::timestamp(3) WHERE id = $2
     )
     SELECT * FROM t`;

/** Inserts turn number `number` with its agents and makes it the session's active turn, in one statement. */
export async function insertTurn(
  sql: SqlClient,
  turn: {
    id: string;
    sessionId: string;
    number: number;
    clientTurnId: string | null;
    initiatorKind: string;
    initiatorId: string | null;
    agentIds: string[];
    now: Date;
  },
): Promise<TurnRow> {
  const [row] = await sql.query<TurnRow>(INSERT_TURN_SQL, [
    turn.id,
    turn.sessionId,
    turn.number,
    turn.clientTurnId,
    turn.initiatorKind,
    turn.initiatorId,
    ts(turn.now),
    turn.agentIds,
  ]);
  return row;
}

/** Records a turn's assembled context and the settings fingerprint it was assembled with; false when the turn is gone. */
export async function recordContext(
  sql: SqlClient,
  turnId: string,
  context: unknown,
  settingsFingerprint: string,
  historyMark: number,
): Promise<boolean> {
  const rows = await sql.query<{ id: string }>(
    'UPDATE "Turn" SET context = $2::jsonb, "contextSettingsFingerprint" = $3, "contextHistoryMark" = $4 WHERE id = $1 RETURNING id',
    [turnId, JSON.stringify(context), settingsFingerprint, historyMark],
  );
  return rows.length > 0;
}

/** A turn of the workspace with its session and agents, read without a lock (reportUsage's checks). */
export async function readTurnInWorkspace(sql: SqlClient, workspaceId: string, turnId: string): Promise<TurnWithAgents | null> {
  const [row] = await sql.query<TurnWithAgents>(
    `${WITH_AGENTS} WHERE t.id = $1 AND EXISTS (SELECT 1 FROM "Session" s WHERE s.id = t."sessionId" AND s."workspaceId" = $2)`,
    [turnId, workspaceId],
  );
  return row ?? null;
}

/** A turn by id when its session is in the workspace (what an event names), without its agents; null otherwise. */
export function findTurnInWorkspace(prisma: PrismaClient, workspaceId: string, turnId: string): Promise<Turn | null> {
  return prisma.turn.findFirst({ where: { id: turnId, session: { workspaceId } } });
}

export async function setAgentStatus(
  sql: SqlClient,
  turnId: string,
  agentId: string,
  status: TurnAgentStatus,
  error: string | null,
  now: Date,
) {
  await sql.query(
    `UPDATE "TurnAgent" SET status = $3::"TurnAgentStatus", error = $4, "completedAt" = $5::timestamp(3)
     WHERE "turnId" = $1 AND "agentId" = $2`,
    [turnId, agentId, status, error, ts(now)],
  );
}

export async function touchTurn(sql: SqlClient, turnId: string, now: Date): Promise<TurnRow> {
  const [row] = await sql.query<TurnRow>('UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1 RETURNING *', [
    turnId,
    ts(now),
  ]);
  return row;
}

/** Moves an ACTIVE turn's `lastActivityAt` (a message of the turn was written); ended turns stay as they are. */
export async function touchIfActive(sql: SqlClient, turnId: string, now: Date) {
  await sql.query(`UPDATE "Turn" SET "lastActivityAt" = $2::timestamp(3) WHERE id = $1 AND status = 'ACTIVE'`, [turnId, ts(now)]);
}

/**
 * Ends an ACTIVE turn: its status, error and end time, its still-active agents set to
 * `agentStatus`, and the session's active turn cleared. The turn's own row changes only while it
 * is ACTIVE, and (for the sweeper) only while it is still idle since `idleBefore`: the returned row
 * is null when another caller ended or touched it first, so an ending happens exactly once.
 */
export async function endTurn(
  sql: SqlClient,
  end: {
    turnId: string;
    status: Exclude<TurnStatus, 'ACTIVE'>;
    error: string | null;
    agentStatus: TurnAgentStatus;
    now: Date;
    idleBefore?: Date;
  },
): Promise<TurnRow | null> {
  const [row] = await sql.query<TurnRow>(
    `WITH t AS (
       UPDATE "Turn" SET status = $2::"TurnStatus", error = $3, "completedAt" = $5::timestamp(3)
       WHERE id = $1 AND status = 'ACTIVE' AND ($6::timestamp(3) IS NULL OR "lastActivityAt" < $6::timestamp(3))
       RETURNING *
     ), a AS (
       UPDATE "TurnAgent" SET status = $4::"TurnAgentStatus", error = CASE WHEN $7::boolean THEN coalesce(error, $3) ELSE error END,
         "completedAt" = $5::timestamp(3)
       WHERE "turnId" = $1 AND status = 'ACTIVE' AND EXISTS (SELECT 1 FROM t)
     ), s AS (
       UPDATE "Session" SET "activeTurnId" = NULL WHERE "activeTurnId" = $1 AND EXISTS (SELECT 1 FROM t)
     )
     SELECT * FROM t`,
    [
      end.turnId,
      end.status,
      end.error,
      end.agentStatus,
      ts(end.now),
      end.idleBefore ? ts(end.idleBefore) : null,
      end.agentStatus === 'FAILED',
    ],
  );
  return row ?? null;
}

/** ACTIVE turns idle since before `idleBefore` (a hint: each is re-checked under its session's lock). */
export async function staleTurns(sql: SqlClient, idleBefore: Date, limit: number): Promise<{ id: string; sessionId: string }[]> {
  return sql.query(
    `SELECT id, "sessionId" FROM "Turn" WHERE status = 'ACTIVE' AND "lastActivityAt" < $1::timestamp(3)
     ORDER BY "lastActivityAt" LIMIT $2`,
    [ts(idleBefore), limit],
  );
}

export async function lockSessionById(sql: SqlClient, sessionId: string): Promise<LockedTurnSession | null> {
  const [row] = await sql.query<LockedTurnSession>('SELECT id, "turnCount", "activeTurnId" FROM "Session" WHERE id = $1 FOR UPDATE', [
    sessionId,
  ]);
  return row ?? null;
}

/** The turn of a session with this id and its status (appendMessages checks it). */
export async function turnStatusIn(sql: SqlClient, sessionId: string, turnId: string): Promise<TurnStatus | null> {
  const [row] = await sql.query<{ status: TurnStatus }>('SELECT status FROM "Turn" WHERE id = $1 AND "sessionId" = $2', [
    turnId,
    sessionId,
  ]);
  return row?.status ?? null;
}
