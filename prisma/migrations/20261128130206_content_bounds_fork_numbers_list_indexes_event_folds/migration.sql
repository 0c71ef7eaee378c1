-- Issue 32 and 36, one migration: message content sizes (page budgets), fork numbers by index seek,
-- session list indexes, and folded event-log rows.

-- message_content_bytes
-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "contentBytes" INTEGER
  -- Computed at each write, while the values are in memory: a page read then sums it without
  -- reading (or decompressing) any message's content (PAGE_CONTENT_BYTES, src/domain/limits.ts).
  GENERATED ALWAYS AS (octet_length("text") + octet_length("parts"::text)) STORED;

-- fork_title_number
-- AlterTable
-- Generated from the title, so every write of a title (create, update, fork, explicit or not) keeps
-- them, and adding them computes them for the sessions that exist. The base is the title with one
-- trailing " (fork N)" removed (src/domain/fork-title.ts; test/integration/forks.test.ts checks that
-- both agree); it is kept as its md5, as a title may be longer than a btree entry may be.
ALTER TABLE "Session" ADD COLUMN     "forkNumber" DECIMAL
  GENERATED ALWAYS AS (substring("title" FROM ' \(fork ([0-9]+)\)$')::numeric) STORED,
ADD COLUMN     "forkTitleBaseHash" BYTEA
  GENERATED ALWAYS AS (decode(md5(regexp_replace("title", ' \(fork ([0-9]+)\)$', '')), 'hex')) STORED;

-- CreateIndex
CREATE INDEX "Session_rootId_forkTitleBaseHash_forkNumber_idx" ON "Session"("rootId", "forkTitleBaseHash", "forkNumber");

-- session_list_indexes
-- CreateIndex
CREATE INDEX "Session_workspaceId_id_idx" ON "Session"("workspaceId", "id" DESC);

-- CreateIndex
CREATE INDEX "Session_workspaceId_kind_id_idx" ON "Session"("workspaceId", "kind", "id" DESC);

-- CreateIndex
CREATE INDEX "Session_workspaceId_parentId_id_idx" ON "Session"("workspaceId", "parentId", "id" DESC);

-- session_event_fold
-- AlterTable
ALTER TABLE "SessionEvent" ADD COLUMN     "lastSequence" INTEGER;

-- CreateIndex
CREATE INDEX "SessionEvent_sessionId_lastSequence_sequence_idx" ON "SessionEvent"("sessionId", "lastSequence", "sequence");

-- CreateIndex
CREATE INDEX "SessionEvent_messageId_idx" ON "SessionEvent"("messageId");

