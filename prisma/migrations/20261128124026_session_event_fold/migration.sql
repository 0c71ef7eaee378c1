-- AlterTable
ALTER TABLE "SessionEvent" ADD COLUMN     "lastSequence" INTEGER;

-- CreateIndex
CREATE INDEX "SessionEvent_sessionId_lastSequence_idx" ON "SessionEvent"("sessionId", "lastSequence");

-- CreateIndex
CREATE INDEX "SessionEvent_messageId_idx" ON "SessionEvent"("messageId");
