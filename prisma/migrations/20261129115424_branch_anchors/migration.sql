-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "branchAnchorId" TEXT;

-- CreateIndex
CREATE INDEX "Session_branchAnchorId_id_idx" ON "Session"("branchAnchorId", "id");

-- Backfill: a fork cut at a message that was itself the first message of a fork cut at the same
-- position takes that fork's anchor; any other fork is anchored at the message at its cut. The
-- recursion walks down from the latter to the former, one fork level per step.
WITH RECURSIVE anchors(id, anchor) AS (
  SELECT s.id, s."forkPointMessageId"
  FROM "Session" s
  JOIN "Message" m ON m.id = s."forkPointMessageId"
  JOIN "Session" o ON o.id = m."sessionId"
  WHERE o."forkIndex" IS DISTINCT FROM m.position
  UNION ALL
  SELECT s.id, a.anchor
  FROM anchors a
  JOIN "Session" o ON o.id = a.id
  JOIN "Message" m ON m."sessionId" = o.id AND m.position = o."forkIndex"
  JOIN "Session" s ON s."forkPointMessageId" = m.id
)
UPDATE "Session" s SET "branchAnchorId" = anchors.anchor FROM anchors WHERE s.id = anchors.id;
