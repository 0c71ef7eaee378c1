-- AlterTable
ALTER TABLE "Turn" ADD COLUMN     "lastActivityAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateTable
CREATE TABLE "TurnUsageReport" (
    "id" TEXT NOT NULL,
    "turnId" TEXT NOT NULL,
    "callId" TEXT,
    "agentId" TEXT NOT NULL,
    "model" TEXT,
    "inputTokens" BIGINT NOT NULL DEFAULT 0,
    "outputTokens" BIGINT NOT NULL DEFAULT 0,
    "cacheReadTokens" BIGINT NOT NULL DEFAULT 0,
    "cacheWriteTokens" BIGINT NOT NULL DEFAULT 0,
    "cost" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TurnUsageReport_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "TurnUsageReport_turnId_callId_key" ON "TurnUsageReport"("turnId", "callId");

-- CreateIndex
CREATE INDEX "Turn_status_lastActivityAt_idx" ON "Turn"("status", "lastActivityAt");

-- AddForeignKey
ALTER TABLE "TurnUsageReport" ADD CONSTRAINT "TurnUsageReport_turnId_fkey" FOREIGN KEY ("turnId") REFERENCES "Turn"("id") ON DELETE CASCADE ON UPDATE CASCADE;
