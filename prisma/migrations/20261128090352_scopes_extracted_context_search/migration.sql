-- CreateEnum
CREATE TYPE "ApiKeyScope" AS ENUM ('READ', 'FULL');

-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "scope" "ApiKeyScope" NOT NULL DEFAULT 'FULL';

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "searchVector" tsvector
  -- Computed once a message is finished, not at every streamed delta, over the text's first 16,384
  -- characters: on PGlite to_tsvector runs on the server's one thread, and its cost grows with the text.
  GENERATED ALWAYS AS (CASE WHEN "generating" THEN NULL ELSE to_tsvector('english'::regconfig, left("text", 16384)) END) STORED;

-- AlterTable
ALTER TABLE "Compaction" ADD COLUMN     "extractedContext" JSONB;

-- CreateIndex
CREATE INDEX "Message_searchVector_idx" ON "Message" USING GIN ("searchVector");
