-- CreateEnum
CREATE TYPE "SessionKind" AS ENUM ('ROOT', 'FORK', 'SUB_AGENT');

-- AlterEnum
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
