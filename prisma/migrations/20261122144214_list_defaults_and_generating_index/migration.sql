-- Roots created before this migration have a NULL ancestor list; they have no ancestors.
UPDATE "Session" SET "ancestorIds" = ARRAY[]::TEXT[] WHERE "ancestorIds" IS NULL;

-- DropIndex
DROP INDEX "Message_sessionId_generating_idx";

-- AlterTable
ALTER TABLE "Session" ALTER COLUMN "ancestorIds" SET DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "Message" ALTER COLUMN "toolCallIds" SET DEFAULT ARRAY[]::TEXT[],
ALTER COLUMN "toolResultIds" SET DEFAULT ARRAY[]::TEXT[];

-- CreateIndex
CREATE INDEX "Message_sessionId_generating_position_idx" ON "Message"("sessionId", "generating", "position");
