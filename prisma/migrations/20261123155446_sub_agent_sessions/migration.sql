-- CreateEnum
CREATE TYPE "SessionKind" AS ENUM ('ROOT', 'FORK', 'SUB_AGENT');

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "SessionEventType" ADD VALUE 'SUB_SESSION_CREATED';
ALTER TYPE "SessionEventType" ADD VALUE 'SUB_SESSION_EVENT';

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "agentId" TEXT,
ADD COLUMN     "kind" "SessionKind" NOT NULL DEFAULT 'ROOT',
ADD COLUMN     "parentMessageCount" INTEGER,
ADD COLUMN     "parentTurnId" TEXT;

-- CreateIndex
CREATE INDEX "Session_parentTurnId_createdAt_idx" ON "Session"("parentTurnId", "createdAt");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_parentTurnId_fkey" FOREIGN KEY ("parentTurnId") REFERENCES "Turn"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Backfill: every existing session with a parent is a fork.
UPDATE "Session" SET "kind" = 'FORK' WHERE "parentId" IS NOT NULL;
