/** Every statement on the `Attachment` table. */
import type { Attachment, Prisma, PrismaClient } from '../../generated/prisma/client.js';
import type { Tx } from '../sql.js';

export function createAttachment(tx: Tx, data: Prisma.AttachmentUncheckedCreateInput): Promise<Attachment> {
  return tx.attachment.create({ data });
}

/** Attachments of the workspace by id. */
export function findAttachments(prisma: PrismaClient, workspaceId: string, ids: string[]): Promise<Attachment[]> {
  return prisma.attachment.findMany({ where: { id: { in: ids }, workspaceId } });
}
