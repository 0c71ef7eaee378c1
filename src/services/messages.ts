import DataLoader from 'dataloader';
import type { Message, PrismaClient } from '../generated/prisma/client.js';
import { clipSegments, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';

export interface MessageRange {
  session: LineageSession;
  /** Inclusive first position. */
  lo: number;
  /** Exclusive end position. */
  hi: number;
}

/** The where clause selecting exactly the rows of these segments. */
export function segmentsWhere(segments: readonly Segment[]) {
  return {
    OR: segments.map((s) => ({ sessionId: s.sessionId, position: { gte: s.start, lt: s.end } })),
  };
}

/**
 * Batches every message-page read of one request into a single query, so a list of sessions with
 * their messages costs the same number of queries whatever the page sizes.
 */
export function createMessageRangeLoader(prisma: PrismaClient) {
  return new DataLoader<MessageRange, Message[], string>(
    async (ranges) => {
      const wanted = ranges.map((r) => clipSegments(visibleSegments(r.session), r.lo, r.hi));
      const all = wanted.flat();
      const rows = all.length ? await prisma.message.findMany({ where: segmentsWhere(all), orderBy: { position: 'asc' } }) : [];
      return wanted.map((segments) =>
        rows.filter((row) => segments.some((s) => s.sessionId === row.sessionId && row.position >= s.start && row.position < s.end)),
      );
    },
    { cacheKeyFn: (r) => `${r.session.id}:${r.session.messageCount}:${r.lo}:${r.hi}` },
  );
}
