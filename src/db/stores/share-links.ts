/**
 * Every statement on the `ShareLink` table: the token check (plain SQL, per request of a share
 * token whose lookup is not cached), the create (under the session's row lock, so the cap on live
 * links per session holds whatever the concurrency), the revoke, and the check of
 * `/attachments/<id>` for a share token. The links of a session are listed by Pothos's Prisma plugin
 * (`Session.shareLinks`).
 */
import type { ShareLink } from '../../generated/prisma/client.js';
import { uuidv7 } from '../ids.js';
import type { SqlClient } from '../sql.js';
import { columnList, type ColumnSet } from './columns.js';

export const SHARE_LINK_COLUMNS: ColumnSet<ShareLink> = {
  id: true,
  workspaceId: true,
  sessionId: true,
  tokenHash: true,
  expiresAt: true,
  revokedAt: true,
  createdAt: true,
};
const SHARE_LINK_SQL = columnList(SHARE_LINK_COLUMNS);

/** The link a token hash names (revoked and expired ones included: the caller decides), or null. */
export async function findShareLinkByHash(sql: SqlClient, tokenHash: string): Promise<ShareLink | null> {
  const [row] = await sql.query<ShareLink>(`SELECT ${SHARE_LINK_SQL} FROM "ShareLink" WHERE "tokenHash" = $1`, [tokenHash]);
  return row ?? null;
}

/**
 * Locks the session row (in a transaction), then counts its links still in force at `now`; null: no
 * such session in the workspace. Two statements: under READ COMMITTED a count in the locking
 * statement would read the snapshot taken before the lock was granted, missing the links a
 * concurrent creation committed meanwhile (a race the share-links test catches on PostgreSQL).
 */
export async function lockSessionForLinks(sql: SqlClient, workspaceId: string, sessionId: string, now: Date): Promise<number | null> {
  const locked = await sql.query('SELECT 1 FROM "Session" WHERE id = $1 AND "workspaceId" = $2 FOR UPDATE', [sessionId, workspaceId]);
  if (locked.length === 0) return null;
  const [row] = await sql.query<{ live: number | string }>(
    `SELECT count(*) AS live FROM "ShareLink"
      WHERE "sessionId" = $1 AND "revokedAt" IS NULL AND ("expiresAt" IS NULL OR "expiresAt" > $2)`,
    [sessionId, now],
  );
  return Number(row.live);
}

export async function insertShareLink(
  sql: SqlClient,
  data: { workspaceId: string; sessionId: string; tokenHash: string; expiresAt: Date; createdAt: Date },
): Promise<ShareLink> {
  const [row] = await sql.query<ShareLink>(
    `INSERT INTO "ShareLink" (id, "workspaceId", "sessionId", "tokenHash", "expiresAt", "createdAt")
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${SHARE_LINK_SQL}`,
    [uuidv7(), data.workspaceId, data.sessionId, data.tokenHash, data.expiresAt, data.createdAt],
  );
  return row;
}

/** Sets `revokedAt` unless already set (revoking twice keeps the first time); the link, or null when the workspace has none of that id. */
export async function revokeShareLink(sql: SqlClient, workspaceId: string, id: string, at: Date): Promise<ShareLink | null> {
  const [row] = await sql.query<ShareLink>(
    `UPDATE "ShareLink" SET "revokedAt" = COALESCE("revokedAt", $3) WHERE id = $1 AND "workspaceId" = $2 RETURNING ${SHARE_LINK_SQL}`,
    [id, workspaceId, at],
  );
  return row ?? null;
}

/**
 * Whether attachment `attachmentId` is in a message `sessionId` shows: any attachment of the
 * session's own messages (all of them are in its view), or one of an ancestor's message inside the
 * part of it the session inherits (`segments`, from its lineage). For an ancestor's, the message is
 * found by its parts holding the attachment's id (jsonb containment), over that one ancestor's
 * inherited range only: the database's work, bounded by the fork point.
 */
export async function attachmentVisibleIn(
  sql: SqlClient,
  workspaceId: string,
  sessionId: string,
  segments: readonly { sessionId: string; start: number; end: number }[],
  attachmentId: string,
): Promise<boolean> {
  const inherited = segments.filter((s) => s.sessionId !== sessionId);
  const rows = await sql.query(
    `SELECT 1 FROM "Attachment" a
      WHERE a.id = $1 AND a."workspaceId" = $2
        AND CASE WHEN a."sessionId" = $3 THEN true ELSE EXISTS (
              SELECT 1 FROM unnest($4::text[], $5::int[], $6::int[]) AS seg("sessionId", lo, hi)
                JOIN "Message" m ON m."sessionId" = seg."sessionId" AND m.position >= seg.lo AND m.position < seg.hi
               WHERE seg."sessionId" = a."sessionId"
                 AND m.parts @> jsonb_build_array(jsonb_build_object('attachmentId', a.id))) END`,
    [attachmentId, workspaceId, sessionId, inherited.map((s) => s.sessionId), inherited.map((s) => s.start), inherited.map((s) => s.end)],
  );
  return rows.length > 0;
}
