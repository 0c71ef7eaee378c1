/** Every statement on the `Attachment` table. */
import type { Attachment, Prisma, PrismaClient } from '../../generated/prisma/client.js';
import type { SqlClient, Tx } from '../sql.js';

export function createAttachment(tx: Tx, data: Prisma.AttachmentUncheckedCreateInput): Promise<Attachment> {
  return tx.attachment.create({ data });
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
}

const SUMMARY_COLUMNS = 'a.id, a."sessionId", a.name, a."mimeType", a.size, char_length(a.content) AS chars';

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
