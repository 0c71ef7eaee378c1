import { describe, expect, it } from 'vitest';
import {
  childLineage,
  clipSegments,
  compactionScopes,
  ownerOf,
  readLineage,
  visibleSegments,
  type LineageEntry,
  type LineageSession,
} from '../../src/domain/lineage.js';

type Node = LineageSession & { compactionCount: number };

const root = (id: string, messageCount: number, compactionCount = 0): Node => ({
  id,
  forkIndex: null,
  messageCount,
  lineage: [],
  compactionCount,
});

/** A fork of `parent` at `index`, with `own` messages appended after the cut. */
function fork(parent: Node, id: string, index: number, own = 0, compactionCount = 0): Node {
  return { id, forkIndex: index, messageCount: index + own, lineage: childLineage(parent, index), compactionCount };
}

/** Expands segments into the owner of every position, for easy comparison. */
const owners = (s: LineageSession) => visibleSegments(s).flatMap((seg) => Array.from({ length: seg.end - seg.start }, () => seg.sessionId));

describe('readLineage', () => {
  it('reads arrays and treats anything else as empty', () => {
    const entries: LineageEntry[] = [{ sessionId: 'a', start: 0, end: 3, compactions: 0 }];
    expect(readLineage(entries)).toEqual(entries);
    expect(readLineage(null)).toEqual([]);
    expect(readLineage({})).toEqual([]);
    expect(readLineage('[]')).toEqual([]);
  });
});

describe('visibleSegments', () => {
  it('is the whole list for a root, and nothing for an empty one', () => {
    expect(visibleSegments(root('r', 5))).toEqual([{ sessionId: 'r', start: 0, end: 5 }]);
    expect(visibleSegments(root('r', 0))).toEqual([]);
  });

  it('is the inherited prefix then the own messages for a fork', () => {
    const p = root('p', 10);
    const f = fork(p, 'f', 6, 3);
    expect(visibleSegments(f)).toEqual([
      { sessionId: 'p', start: 0, end: 6 },
      { sessionId: 'f', start: 6, end: 9 },
    ]);
  });

  it('shows no own segment for a fork with no own messages yet, and nothing for a fork at 0', () => {
    const p = root('p', 10);
    expect(visibleSegments(fork(p, 'f', 4))).toEqual([{ sessionId: 'p', start: 0, end: 4 }]);
    expect(visibleSegments(fork(p, 'z', 0))).toEqual([]);
    expect(visibleSegments(fork(p, 'z2', 0, 2))).toEqual([{ sessionId: 'z2', start: 0, end: 2 }]);
  });

  it('clips an ancestor when a fork cuts below its own start (fork F1 at 6, then F1 at 2)', () => {
    const p = root('p', 10);
    const f1 = fork(p, 'f1', 6, 4); // p[0,6) + f1[6,10)
    const f2 = fork(f1, 'f2', 2, 5); // p[0,2) + f2[2,7)
    expect(visibleSegments(f2)).toEqual([
      { sessionId: 'p', start: 0, end: 2 },
      { sessionId: 'f2', start: 2, end: 7 },
    ]);
    expect(owners(f2)).toEqual(['p', 'p', 'f2', 'f2', 'f2', 'f2', 'f2']);
  });

  it('chains any depth: each level sees exactly the prefix at its cut', () => {
    // Level k forks level k-1 at (its count - 1) and appends 3 messages.
    let current = root('L0', 4);
    const expected: string[] = ['L0', 'L0', 'L0', 'L0'];
    for (let level = 1; level <= 25; level++) {
      const cut = current.messageCount - 1;
      current = fork(current, `L${level}`, cut, 3);
      expected.splice(cut, Infinity, `L${level}`, `L${level}`, `L${level}`);
      expect(owners(current)).toEqual(expected);
    }
    // Segments stay ordered, disjoint and non-empty.
    const segs = visibleSegments(current);
    for (let i = 1; i < segs.length; i++) expect(segs[i].start).toBe(segs[i - 1].end);
    expect(segs.every((s) => s.end > s.start)).toBe(true);
  });
});

describe('clipSegments', () => {
  const segs = [
    { sessionId: 'a', start: 0, end: 4 },
    { sessionId: 'b', start: 4, end: 6 },
    { sessionId: 'c', start: 6, end: 10 },
  ];
  it('keeps the parts inside [lo, hi)', () => {
    expect(clipSegments(segs, 3, 7)).toEqual([
      { sessionId: 'a', start: 3, end: 4 },
      { sessionId: 'b', start: 4, end: 6 },
      { sessionId: 'c', start: 6, end: 7 },
    ]);
    expect(clipSegments(segs, 4, 6)).toEqual([{ sessionId: 'b', start: 4, end: 6 }]);
  });
  it('is empty for an empty or out-of-range window', () => {
    expect(clipSegments(segs, 5, 5)).toEqual([]);
    expect(clipSegments(segs, 10, 20)).toEqual([]);
    expect(clipSegments(segs, 7, 3)).toEqual([]);
    expect(clipSegments([], 0, 10)).toEqual([]);
  });
});

describe('ownerOf', () => {
  it('names the session that owns a position, null outside the list', () => {
    const p = root('p', 10);
    const f = fork(p, 'f', 6, 2);
    expect(ownerOf(f, 0)).toBe('p');
    expect(ownerOf(f, 5)).toBe('p');
    expect(ownerOf(f, 6)).toBe('f');
    expect(ownerOf(f, 7)).toBe('f');
    expect(ownerOf(f, 8)).toBeNull();
    expect(ownerOf(f, -1)).toBeNull();
    // The parent's own message at 7 is not in the fork's view.
    expect(ownerOf(p, 7)).toBe('p');
  });
});

describe('childLineage', () => {
  it('freezes what the fork sees from each ancestor and how many compactions they had', () => {
    const p = root('p', 10, 2);
    const f1 = fork(p, 'f1', 6, 4, 1);
    expect(f1.lineage).toEqual([{ sessionId: 'p', start: 0, end: 6, compactions: 2, transforms: 0 }]);
    const f2 = fork(f1, 'f2', 8);
    expect(f2.lineage).toEqual([
      { sessionId: 'p', start: 0, end: 6, compactions: 2, transforms: 0 },
      { sessionId: 'f1', start: 6, end: 8, compactions: 1, transforms: 0 },
    ]);
    // A later change to an ancestor does not change a frozen lineage.
    p.messageCount = 50;
    expect(visibleSegments(f2)).toEqual([
      { sessionId: 'p', start: 0, end: 6 },
      { sessionId: 'f1', start: 6, end: 8 },
    ]);
  });

  it('does not mutate the parent lineage', () => {
    const p = root('p', 10);
    const f1 = fork(p, 'f1', 6, 4);
    const before = JSON.stringify(f1.lineage);
    fork(f1, 'f2', 2);
    expect(JSON.stringify(f1.lineage)).toBe(before);
  });
});

describe('compactionScopes', () => {
  it("limits ancestors' compactions to those made before the fork and ending within the inherited part", () => {
    const p = root('p', 10, 3);
    const f1 = fork(p, 'f1', 6, 4, 1);
    const f2 = fork(f1, 'f2', 8);
    expect(compactionScopes(f2)).toEqual([
      { sessionId: 'p', maxOrdinal: 3, maxUpto: 6 },
      { sessionId: 'f1', maxOrdinal: 1, maxUpto: 8 },
      { sessionId: 'f2', maxOrdinal: null, maxUpto: null },
    ]);
    expect(compactionScopes(p)).toEqual([{ sessionId: 'p', maxOrdinal: null, maxUpto: null }]);
  });
});
