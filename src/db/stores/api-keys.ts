/**
 * Every statement on the `Workspace` and `ApiKey` tables (the server's key check and `npm run keys`).
 * What the server runs (at start, and per key lookup) is plain SQL: a server that has only started,
 * or only streams, never loads Prisma's query compiler for them.
 */
import type { ApiKey, ApiKeyScope, PrismaClient, Workspace } from '../../generated/prisma/client.js';
import { uuidv7 } from '../ids.js';
import { asSql, type SqlClient, type SqlTarget } from '../sql.js';
import { columnList, type ColumnSet } from './columns.js';

/** Every column of the two tables, for the reads below: a column added to either is a type error here. */
export const WORKSPACE_COLUMNS: ColumnSet<Workspace> = { id: true, name: true, createdAt: true };
export const API_KEY_COLUMNS: ColumnSet<ApiKey> = {
  id: true,
  workspaceId: true,
  name: true,
  keyHash: true,
  scope: true,
  createdAt: true,
  revokedAt: true,
};
const WORKSPACE_SQL = columnList(WORKSPACE_COLUMNS);
const API_KEY_SQL = columnList(API_KEY_COLUMNS);

/** A key row with its workspace's name, as `npm run keys -- list` shows it. */
export type ApiKeyWithWorkspace = ApiKey & { workspace: Workspace };

/**
 * The workspace called `name`, created if it does not exist yet. One statement that writes only
 * when the row is missing: every start ensures its workspaces, and an upsert that always updated
 * wrote (and flushed) a new version of the row each time. The no-op update on a conflict makes it
 * return the row a concurrent start (or `npm run keys`) inserted meanwhile.
 */
export async function ensureWorkspace(db: SqlTarget, name: string): Promise<Workspace> {
  const [row] = await asSql(db).query<Workspace>(
    `WITH found AS (SELECT ${WORKSPACE_SQL} FROM "Workspace" WHERE name = $2),
     made AS (
       INSERT INTO "Workspace" (id, name) SELECT $1, $2 WHERE NOT EXISTS (SELECT FROM found)
       ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING ${WORKSPACE_SQL}
     )
     SELECT ${WORKSPACE_SQL} FROM found UNION ALL SELECT ${WORKSPACE_SQL} FROM made`,
    [uuidv7(), name],
  );
  return row;
}

/**
 * Stores a key from API_KEYS unless its hash is already stored; returns the stored row. Never
 * un-revokes: a key revoked with `npm run keys -- revoke` stays refused whatever API_KEYS says.
 * Its scope is what API_KEYS says now (the entry is the key's definition), written only when it
 * changed.
 */
export async function storeBootstrapKey(
  sql: SqlClient,
  data: { workspaceId: string; name: string; keyHash: string; scope: ApiKeyScope },
): Promise<ApiKey> {
  const [row] = await sql.query<ApiKey>(
    `WITH found AS (SELECT ${API_KEY_SQL} FROM "ApiKey" WHERE "keyHash" = $4 AND scope = $5::"ApiKeyScope"),
     made AS (
       INSERT INTO "ApiKey" (id, "workspaceId", name, "keyHash", scope)
       SELECT $1, $2, $3, $4, $5::"ApiKeyScope" WHERE NOT EXISTS (SELECT FROM found)
       ON CONFLICT ("keyHash") DO UPDATE SET scope = EXCLUDED.scope RETURNING ${API_KEY_SQL}
     )
     SELECT ${API_KEY_SQL} FROM found UNION ALL SELECT ${API_KEY_SQL} FROM made`,
    [uuidv7(), data.workspaceId, data.name, data.keyHash, data.scope],
  );
  return row;
}

export function insertApiKey(
  prisma: PrismaClient,
  data: { workspaceId: string; name: string; keyHash: string; scope: ApiKeyScope },
): Promise<ApiKey> {
  return prisma.apiKey.create({ data });
}

export async function findApiKeyByHash(sql: SqlClient, keyHash: string): Promise<ApiKey | null> {
  const [row] = await sql.query<ApiKey>(`SELECT ${API_KEY_SQL} FROM "ApiKey" WHERE "keyHash" = $1`, [keyHash]);
  return row ?? null;
}

/** Whether any key is not revoked (AUTH_REQUIRED unset: keys are required once one exists). */
export async function anyActiveApiKey(sql: SqlClient): Promise<boolean> {
  return (await sql.query('SELECT 1 FROM "ApiKey" WHERE "revokedAt" IS NULL LIMIT 1')).length > 0;
}

/** Every key, oldest first, with its workspace. */
export function listApiKeys(prisma: PrismaClient): Promise<ApiKeyWithWorkspace[]> {
  return prisma.apiKey.findMany({ include: { workspace: true }, orderBy: { createdAt: 'asc' } });
}

/** Sets `revokedAt` if not set yet (revoking twice keeps the first time); returns the row, or null. */
export async function revokeApiKey(prisma: PrismaClient, id: string, at = new Date()): Promise<ApiKeyWithWorkspace | null> {
  await prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
  return prisma.apiKey.findUnique({ where: { id }, include: { workspace: true } });
}
