-- AlterTable
ALTER TABLE "Turn" ADD COLUMN     "contextSettingsFingerprint" TEXT;

-- Backfill: turns whose context was recorded before this column existed.
UPDATE "Turn" SET "contextSettingsFingerprint" = "context"->>'settingsFingerprint'
WHERE "context" IS NOT NULL AND "context"->>'settingsFingerprint' IS NOT NULL;
