-- CreateEnum
CREATE TYPE "AttachmentKind" AS ENUM ('TEXT', 'BYTES', 'URL', 'PROVIDER_FILE');

-- CreateEnum
CREATE TYPE "CostSource" AS ENUM ('REPORTED', 'CATALOG', 'UNKNOWN');

-- AlterTable
ALTER TABLE "Attachment" ADD COLUMN     "blobSha256" TEXT,
ADD COLUMN     "height" INTEGER,
ADD COLUMN     "kind" "AttachmentKind" NOT NULL DEFAULT 'TEXT',
ADD COLUMN     "pages" INTEGER,
ADD COLUMN     "providerFile" JSONB,
ADD COLUMN     "url" TEXT,
ADD COLUMN     "width" INTEGER;

-- AlterTable
ALTER TABLE "TurnUsageReport" ADD COLUMN     "costSource" "CostSource" NOT NULL DEFAULT 'REPORTED';

-- CreateTable
CREATE TABLE "AttachmentBlob" (
    "workspaceId" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "bytes" BYTEA NOT NULL,
    "size" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AttachmentBlob_pkey" PRIMARY KEY ("workspaceId","sha256")
);

-- CreateTable
CREATE TABLE "ShareLink" (
    "id" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ShareLink_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AssemblyPrefix" (
    "sessionId" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "hashes" BYTEA NOT NULL,
    "tokens" INTEGER[],
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AssemblyPrefix_pkey" PRIMARY KEY ("sessionId","format")
);

-- CreateIndex
CREATE UNIQUE INDEX "ShareLink_tokenHash_key" ON "ShareLink"("tokenHash");

-- CreateIndex
CREATE INDEX "ShareLink_sessionId_idx" ON "ShareLink"("sessionId");

-- CreateIndex
CREATE INDEX "Attachment_workspaceId_blobSha256_idx" ON "Attachment"("workspaceId", "blobSha256");

-- AddForeignKey
ALTER TABLE "Attachment" ADD CONSTRAINT "Attachment_workspaceId_blobSha256_fkey" FOREIGN KEY ("workspaceId", "blobSha256") REFERENCES "AttachmentBlob"("workspaceId", "sha256") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AttachmentBlob" ADD CONSTRAINT "AttachmentBlob_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ShareLink" ADD CONSTRAINT "ShareLink_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ShareLink" ADD CONSTRAINT "ShareLink_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AssemblyPrefix" ADD CONSTRAINT "AssemblyPrefix_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;
