-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "contentBytes" INTEGER
  -- Computed at each write, while the values are in memory: a page read then sums it without
  -- reading (or decompressing) any message's content (PAGE_CONTENT_BYTES, src/domain/limits.ts).
  GENERATED ALWAYS AS (octet_length("text") + octet_length("parts"::text)) STORED;
