-- AlterTable
ALTER TABLE "SessionEvent" ADD COLUMN     "lastSequence" INTEGER;

-- CreateIndex
CREATE INDEX "SessionEvent_sessionId_lastSequence_sequence_idx" ON "SessionEvent"("sessionId", "lastSequence", "sequence");

-- CreateIndex
CREATE INDEX "SessionEvent_messageId_idx" ON "SessionEvent"("messageId");
