/**
 * The read-through of `Session.messages` pages: one DataLoader per request batches every page read
 * into a single statement, and serves from `pages` (caches/finished-rows.ts) every page it holds
 * whole. `pages` holds whole finished rows, which never change (its rule, and who calls `forget`,
 * are stated there); what is read here is added to it. Every page is cut to its content bounds
 * (domain/content-budget.ts): the request's `ResponseBudget` is reserved before the statement and
 * settled once the pages are cut.
 */
import { contentBytesOf, cutPages, type ResponseBudget } from '../domain/content-budget.js';
import { markImmutable } from '../domain/immutable.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { clipSegments, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import { readPagesWithin } from '../db/stores/messages.js';
import type { SqlClient } from '../db/sql.js';
import type { Message } from '../generated/prisma/client.js';
import DataLoader from 'dataloader';
import type { FinishedRowsCache } from './finished-rows.js';

export interface MessageRange {
  session: LineageSession;
  /** Inclusive first position. */
  lo: number;
  /** Exclusive end position. */
  hi: number;
  /**
   * The page is read from its end (last/before): cut by its budget, it keeps its newest messages
   * (else its oldest).
   */
  fromEnd?: boolean;
}

/**
 * Batches every message-page read of one request into a single query, so a list of sessions with
 * their messages costs the same number of queries whatever the page sizes. A page whose rows are
 * all in `pages` (whole finished rows, which never change) is not read at all; what is read is
 * kept there. Each page comes back oldest first, cut to PAGE_CONTENT_BYTES and to what is left of
 * `budget` (a page cut short has fewer rows than hi - lo: the resolver says so in its pageInfo).
 */
export function createMessageRangeLoader(sql: SqlClient, pages: FinishedRowsCache<Message>, budget: ResponseBudget) {
  return new DataLoader<MessageRange, Message[], string>(
    async (ranges) => {
      const wanted = ranges.map((r) => clipSegments(visibleSegments(r.session), r.lo, r.hi));
      // At most a page's bound each (a page's one oversized message may go beyond: `settle` counts it).
      const reserved = budget.reserve(wanted.filter((s) => s.length > 0).length * PAGE_CONTENT_BYTES);
      // Taken from the cache first: keeping what is read below may evict them.
      const rowsOf: (Message[] | null)[] = wanted.map((segments) => (segments.every(covered) ? fromCache(segments) : null));
      const unread = wanted.flatMap((_, i) => (rowsOf[i] === null ? [i] : []));
      if (reserved > 0 && unread.length > 0) {
        // The same page asked for again (aliases) is read once: the cut below shares its rows.
        const distinct = new Map<string, number>();
        const readAs = unread.map((i) => {
          const key = JSON.stringify([wanted[i], ranges[i].fromEnd === true]);
          if (!distinct.has(key)) distinct.set(key, distinct.size);
          return distinct.get(key)!;
        });
        const firstOf = [...distinct.values()].map((d) => unread[readAs.indexOf(d)]);
        const read = await readPagesWithin(
          sql,
          firstOf.map((i) => ({ segments: wanted[i], fromEnd: ranges[i].fromEnd === true })),
          PAGE_CONTENT_BYTES,
          reserved,
        );
        const bySession = new Map<string, Message[]>();
        const readRows = firstOf.map((): Message[] => []);
        unread.forEach((i, n) => {
          rowsOf[i] = readRows[readAs[n]];
        });
        for (const { page, ...row } of read) {
          readRows[page].push(row);
          const list = bySession.get(row.sessionId);
          if (list) list.push(row);
          else bySession.set(row.sessionId, [row]);
        }
        for (const [sessionId, list] of bySession) {
          // What is kept is shared by every request: frozen, so a stray write throws.
          for (const row of list) if (!row.generating) markImmutable(row.parts as object);
          pages.add(sessionId, list);
        }
      }
      // The statement cut the pages it read as if alone; cut again, in order, with the cached ones.
      const inPageOrder = rowsOf.map((rows, i) => ({ rows: ranges[i].fromEnd ? [...(rows ?? [])].reverse() : (rows ?? []) }));
      const { kept, spent } = cutPages(inPageOrder, contentBytesOf, reserved);
      budget.settle(reserved, spent);
      return inPageOrder.map(({ rows }, i) => {
        const page = rows.slice(0, kept[i]);
        return ranges[i].fromEnd ? page.reverse() : page;
      });
    },
    // Not memoized: each page asked for (an alias of the same page too) spends its own share of the budget.
    { cache: false },
  );

  function covered(segment: Segment): boolean {
    const kept = pages.range(segment.sessionId);
    return kept !== null && kept.lo <= segment.start && segment.end <= kept.hi;
  }

  function fromCache(segments: readonly Segment[]): Message[] {
    return segments.flatMap((s) => pages.oldestFirst(s.sessionId, s.start, s.end));
  }
}
