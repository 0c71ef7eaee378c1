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
