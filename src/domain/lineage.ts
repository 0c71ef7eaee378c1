/**
 * Copy-on-write fork lineage. A session sees, in index order, the positions [start, end) of each
 * ancestor (root first) and then its own messages from `forkIndex` on. The ancestor part is frozen
 * when the fork is made, so reading any page of any fork is one indexed query over a few ranges,
 * whatever the depth and length.
 */

/** What a session sees of one ancestor; frozen at fork time. */
export interface LineageEntry {
  sessionId: string;
  /** The ancestor's own first position (its forkIndex, 0 for a root). */
  start: number;
  /** Exclusive end of what the descendant sees from this ancestor. */
  end: number;
  /** How many of the ancestor's compactions existed when the lineage left it. */
  compactions: number;
  /** How many of the ancestor's history transforms existed then (absent in lineages older than transforms: none did). */
  transforms?: number;
}

/** A range of positions owned by one session. */
export interface Segment {
  sessionId: string;
  start: number;
  end: number;
}

export interface LineageSession {
  id: string;
  forkIndex: number | null;
  messageCount: number;
  lineage: unknown;
}

export function readLineage(raw: unknown): LineageEntry[] {
  return Array.isArray(raw) ? (raw as LineageEntry[]) : [];
}

/** The session's message list as ordered, non-empty, disjoint segments. */
export function visibleSegments(session: LineageSession): Segment[] {
  const segments: Segment[] = [];
  for (const entry of readLineage(session.lineage)) {
    if (entry.end > entry.start) segments.push({ sessionId: entry.sessionId, start: entry.start, end: entry.end });
  }
  const ownStart = session.forkIndex ?? 0;
  if (session.messageCount > ownStart) segments.push({ sessionId: session.id, start: ownStart, end: session.messageCount });
  return segments;
}

/** The parts of `segments` that fall in positions [lo, hi). */
export function clipSegments(segments: readonly Segment[], lo: number, hi: number): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const start = Math.max(s.start, lo);
    const end = Math.min(s.end, hi);
    if (end > start) out.push({ sessionId: s.sessionId, start, end });
  }
  return out;
}

/** The session that owns `position` in this session's view, or null when out of range. */
export function ownerOf(session: LineageSession, position: number): string | null {
  const hit = visibleSegments(session).find((s) => position >= s.start && position < s.end);
  return hit?.sessionId ?? null;
}

/** The lineage of a new fork of `parent` cut at `forkIndex` (it sees the parent's [0, forkIndex)). */
export function childLineage(
  parent: LineageSession & { compactionCount: number; transformCount?: number },
  forkIndex: number,
): LineageEntry[] {
  const inherited = readLineage(parent.lineage).map((entry) => ({ ...entry, end: Math.min(entry.end, forkIndex) }));
  inherited.push({
    sessionId: parent.id,
    start: parent.forkIndex ?? 0,
    end: forkIndex,
    compactions: parent.compactionCount,
    transforms: parent.transformCount ?? 0,
  });
  return inherited;
}

/**
 * Which compactions of which sessions apply to this session: an ancestor's compaction applies when
 * it existed when the lineage left that ancestor and its range ends within what is inherited from
 * it; all of the session's own compactions apply. The latest applicable one wins.
 */
export function compactionScopes(
  session: Pick<LineageSession, 'id' | 'lineage'>,
): { sessionId: string; maxOrdinal: number | null; maxUpto: number | null }[] {
  const scopes: { sessionId: string; maxOrdinal: number | null; maxUpto: number | null }[] = readLineage(session.lineage).map((entry) => ({
    sessionId: entry.sessionId,
    maxOrdinal: entry.compactions,
    maxUpto: entry.end,
  }));
  scopes.push({ sessionId: session.id, maxOrdinal: null, maxUpto: null });
  return scopes;
}

/**
 * Which history transforms of which sessions apply to this session, root first: an ancestor's
 * when it existed as the lineage left that ancestor (and, checked per row, targets a position
 * before `maxEnd`); all of the session's own. Ancestors with none are left out, so a session
 * whose scopes are all empty needs no read at all.
 */
export function transformScopes(
  session: Pick<LineageSession, 'id' | 'lineage'> & { transformCount: number },
): { sessionId: string; maxOrdinal: number | null; maxEnd: number | null }[] {
  const scopes: { sessionId: string; maxOrdinal: number | null; maxEnd: number | null }[] = [];
  for (const entry of readLineage(session.lineage)) {
    if ((entry.transforms ?? 0) > 0) scopes.push({ sessionId: entry.sessionId, maxOrdinal: entry.transforms!, maxEnd: entry.end });
  }
  if (session.transformCount > 0) scopes.push({ sessionId: session.id, maxOrdinal: null, maxEnd: null });
  return scopes;
}

/** The sum of transforms and compactions the session sees: it grows with every one added to its view. */
export function historyMark(session: Pick<LineageSession, 'lineage'> & { transformCount: number; compactionCount: number }): number {
  let mark = session.transformCount + session.compactionCount;
  for (const entry of readLineage(session.lineage)) mark += (entry.transforms ?? 0) + entry.compactions;
  return mark;
}
