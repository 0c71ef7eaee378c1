-- CreateEnum
CREATE TYPE "MessageTransformKind" AS ENUM ('HIDE', 'UNHIDE', 'REDACT', 'UNREDACT', 'STRIP_TOOL_OUTPUTS');

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "SessionEventType" ADD VALUE 'MESSAGES_HIDDEN';
ALTER TYPE "SessionEventType" ADD VALUE 'MESSAGES_UNHIDDEN';
ALTER TYPE "SessionEventType" ADD VALUE 'MESSAGE_REDACTED';
ALTER TYPE "SessionEventType" ADD VALUE 'MESSAGE_UNREDACTED';
ALTER TYPE "SessionEventType" ADD VALUE 'TOOL_OUTPUTS_STRIPPED';

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "transformCount" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "Turn" ADD COLUMN     "contextHistoryMark" INTEGER;

-- CreateTable
CREATE TABLE "MessageTransform" (
    "id" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "ordinal" INTEGER NOT NULL,
    "kind" "MessageTransformKind" NOT NULL,
    "messageId" TEXT,
    "position" INTEGER NOT NULL,
    "reason" TEXT,
    "replacement" TEXT,
    "tokensO200k" INTEGER,
    "tokensCl100k" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "MessageTransform_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "MessageTransform_messageId_idx" ON "MessageTransform"("messageId");

-- CreateIndex
CREATE UNIQUE INDEX "MessageTransform_sessionId_ordinal_key" ON "MessageTransform"("sessionId", "ordinal");

-- AddForeignKey
ALTER TABLE "MessageTransform" ADD CONSTRAINT "MessageTransform_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MessageTransform" ADD CONSTRAINT "MessageTransform_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "Message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
