/**
 * The read-through of `Session.messages` pages: one DataLoader per request batches every page read
 * into a single statement, and serves from `pages` (caches/finished-rows.ts) whatever it holds.
 * `pages` holds whole finished rows, which never change (its rule, and who calls `forget`, are
 * stated there); what is read here is added to it.
 */
import { markImmutable } from '../domain/immutable.js';
import { clipSegments, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import { readSegments } from '../db/stores/messages.js';
import type { SqlClient } from '../db/sql.js';
import type { Message } from '../generated/prisma/client.js';
import { DataLoader } from '../packages/index.js';
import type { FinishedRowsCache } from './finished-rows.js';

export interface MessageRange {
  session: LineageSession;
  /** Inclusive first position. */
  lo: number;
  /** Exclusive end position. */
  hi: number;
}

/**
 * Batches every message-page read of one request into a single query, so a list of sessions with
 * their messages costs the same number of queries whatever the page sizes. Segments whose rows are
 * all in `pages` (whole finished rows, which never change) are not read at all; what is read is
 * kept there.
 */
export function createMessageRangeLoader(sql: SqlClient, pages: FinishedRowsCache<Message>) {
  return new DataLoader<MessageRange, Message[], string>(
    async (ranges) => {
      const wanted = ranges.map((r) => clipSegments(visibleSegments(r.session), r.lo, r.hi));
      // Taken from the cache first: keeping what is read below may evict them.
      const cached = new Map<Segment, Message[]>();
      const missing: Segment[] = [];
      for (const s of wanted.flat()) {
        if (covers(pages.range(s.sessionId), s)) cached.set(s, pages.oldestFirst(s.sessionId, s.start, s.end));
        else missing.push(s);
      }
      const rows = missing.length ? await readSegments(sql, missing) : [];
      const read = new Map<string, Message[]>();
      for (const row of rows) {
        const list = read.get(row.sessionId);
        if (list) list.push(row);
        else read.set(row.sessionId, [row]);
      }
      for (const [sessionId, list] of read) {
        // What is kept is shared by every request: frozen, so a stray write throws.
        for (const row of list) if (!row.generating) markImmutable(row.parts as object);
        pages.add(sessionId, list);
      }
      return wanted.map((segments) =>
        segments.flatMap(
          (s) => cached.get(s) ?? (read.get(s.sessionId) ?? []).filter((row) => row.position >= s.start && row.position < s.end),
        ),
      );
    },
    { cacheKeyFn: (r) => `${r.session.id}:${r.session.messageCount}:${r.lo}:${r.hi}` },
  );
}

function covers(kept: { lo: number; hi: number } | null, segment: Segment): boolean {
  return kept !== null && kept.lo <= segment.start && segment.end <= kept.hi;
}
