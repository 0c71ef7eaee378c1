/** Every statement on the `Attachment` table. */
import type { Attachment, Prisma, PrismaClient } from '../../generated/prisma/client.js';
import type { AttachmentKind, ProviderFileRef } from '../../domain/types.js';
import type { SqlClient, Tx } from '../sql.js';

export function createAttachment(tx: Tx, data: Prisma.AttachmentUncheckedCreateInput): Promise<Attachment> {
  return tx.attachment.create({ data });
}

/**
 * Keeps `bytes` in the workspace's blob of that SHA-256, once: an existing blob is kept (same hash,
 * same bytes). Run in the transaction that inserts the attachment referencing it; the reference's
 * foreign key then holds the blob against the sweep of unreferenced blobs.
 */
export async function keepBlob(sql: SqlClient, workspaceId: string, sha256: string, bytes: Uint8Array): Promise<void> {
  await sql.query(
    `INSERT INTO "AttachmentBlob" ("workspaceId", sha256, bytes, size) VALUES ($1, $2, decode($3, 'base64'), $4)
     ON CONFLICT ("workspaceId", sha256) DO UPDATE SET size = EXCLUDED.size`,
    [workspaceId, sha256, base64Of(bytes), bytes.length],
  );
}

/*
 * Bytes cross the driver as base64 text, in both directions: a text parameter and a text column
 * are copied whole by every driver, where a bytea value is encoded or parsed byte by byte in
 * JavaScript by some (PGlite's, Prisma's parameter path), on the request thread (figures in
 * docs/performance.md, "Files"). PostgreSQL's `encode(…, 'base64')` breaks lines every 76
 * characters; the statement takes them out, so the text is the payload's base64 as is.
 */
const base64Of = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');
const BASE64_OF = (expression: string) => `translate(encode(${expression}, 'base64'), E'\\n', '')`;

/** The blobs the attachments of these sessions hold (before the sessions are deleted). */
export async function blobsOfSessions(sql: SqlClient, ids: readonly string[]): Promise<string[]> {
  const rows = await sql.query<{ sha256: string }>(
    `SELECT DISTINCT "blobSha256" AS sha256 FROM "Attachment" WHERE "sessionId" = ANY($1::text[]) AND "blobSha256" IS NOT NULL`,
    [ids],
  );
  return rows.map((row) => row.sha256);
}

/**
 * Deletes these blobs of the workspace that no attachment holds any more. An append that takes one
 * of them meanwhile makes the statement fail on the foreign key (the blob is then kept): the
 * caller runs this after its own transaction and treats that failure as "still in use".
 */
export async function sweepBlobs(sql: SqlClient, workspaceId: string, shas: readonly string[]): Promise<number> {
  if (shas.length === 0) return 0;
  const rows = await sql.query(
    `DELETE FROM "AttachmentBlob" b WHERE b."workspaceId" = $1 AND b.sha256 = ANY($2::text[])
        AND NOT EXISTS (SELECT 1 FROM "Attachment" a WHERE a."workspaceId" = b."workspaceId" AND a."blobSha256" = b.sha256)
     RETURNING b.sha256`,
    [workspaceId, shas],
  );
  return rows.length;
}

/** Attachments of the workspace by id. */
export function findAttachments(prisma: PrismaClient, workspaceId: string, ids: string[]): Promise<Attachment[]> {
  return prisma.attachment.findMany({ where: { id: { in: ids }, workspaceId } });
}

/** What a reference block and the `Attachment` type need of an attachment: no content. */
export interface AttachmentSummary {
  id: string;
  sessionId: string;
  name: string;
  mimeType: string;
  size: number;
  /** Length of the text content in Unicode code points (PostgreSQL's char_length on UTF-8); null without text. */
  chars: number | null;
  sha256: string;
  kind: AttachmentKind;
  width: number | null;
  height: number | null;
  pages: number | null;
  url: string | null;
  providerFile: ProviderFileRef | null;
}

const SUMMARY_COLUMNS =
  'a.id, a."sessionId", a.name, a."mimeType", a.size, char_length(a.content) AS chars, a.sha256, a.kind, a.width, a.height, a.pages, a.url, a."providerFile"';

/** The bytes of BYTES attachments of the workspace, by attachment id (no row for another kind or workspace). */
export async function readAttachmentBytes(
  sql: SqlClient,
  workspaceId: string,
  ids: readonly string[],
): Promise<{ id: string; bytes: Uint8Array }[]> {
  const rows = await sql.query<{ id: string; data: string }>(
    `SELECT a.id, ${BASE64_OF('b.bytes')} AS data FROM "Attachment" a
       JOIN "AttachmentBlob" b ON b."workspaceId" = a."workspaceId" AND b.sha256 = a."blobSha256"
      WHERE a."workspaceId" = $1 AND a.id = ANY($2::text[])`,
    [workspaceId, ids],
  );
  return rows.map((row) => ({ id: row.id, bytes: Buffer.from(row.data, 'base64') }));
}

/**
 * Bytes [start, start + length) of one attachment's content (TEXT: its UTF-8), cut in the database,
 * so a range request reads only its range. Null when the workspace has no such attachment, or it
 * holds no content here (URL, PROVIDER_FILE).
 */
export async function readAttachmentRange(
  sql: SqlClient,
  workspaceId: string,
  id: string,
  start: number,
  length: number,
): Promise<Uint8Array | null> {
  const [row] = await sql.query<{ data: string | null }>(
    `SELECT ${BASE64_OF(`substring(COALESCE(b.bytes, convert_to(a.content, 'UTF8')) FROM $3::int + 1 FOR $4::int)`)} AS data
       FROM "Attachment" a
       LEFT JOIN "AttachmentBlob" b ON b."workspaceId" = a."workspaceId" AND b.sha256 = a."blobSha256"
      WHERE a."workspaceId" = $1 AND a.id = $2`,
    [workspaceId, id, start, length],
  );
  return row?.data == null ? null : Buffer.from(row.data, 'base64');
}

/** Attachments of the workspace by id, without their content (its length is counted in the database). */
export function findAttachmentSummaries(sql: SqlClient, workspaceId: string, ids: readonly string[]): Promise<AttachmentSummary[]> {
  return sql.query<AttachmentSummary>(
    `SELECT ${SUMMARY_COLUMNS} FROM "Attachment" a WHERE a."workspaceId" = $1 AND a.id = ANY($2::text[])`,
    [workspaceId, ids],
  );
}

/** A page to read: code points [offset, offset + length) of one attachment's text. */
export interface AttachmentPageRead {
  id: string;
  offset: number;
  length: number;
}

/** One read's page: the attachment (no content) and `text`, null when it has no text content. */
export interface AttachmentPageRow extends AttachmentSummary {
  /** 1-based position of the read it answers. */
  ord: number;
  text: string | null;
}

/**
 * Pages of attachments of the workspace, in one statement: only the pages travel, never a whole
 * content. Offsets and lengths count code points, as PostgreSQL's substr does on UTF-8 text. A read
 * of an attachment that is not in the workspace has no row.
 */
export function readAttachmentPages(
  sql: SqlClient,
  workspaceId: string,
  reads: readonly AttachmentPageRead[],
): Promise<AttachmentPageRow[]> {
  return sql.query<AttachmentPageRow>(
    `SELECT r.ord::int AS ord, ${SUMMARY_COLUMNS}, substr(a.content, LEAST(r.off + 1, 2147483647)::int, r.len) AS text
       FROM unnest($2::text[], $3::bigint[], $4::int[]) WITH ORDINALITY AS r(id, off, len, ord)
       JOIN "Attachment" a ON a.id = r.id AND a."workspaceId" = $1`,
    [workspaceId, reads.map((r) => r.id), reads.map((r) => r.offset), reads.map((r) => r.length)],
  );
}
