import { describe, expect, it } from 'vitest';
import { buildTimeline, type TimelineNode } from '../../src/domain/timeline.js';

const node = (
  id: string,
  parentSessionId: string | null,
  parentMessageCount: number,
  messageCount: number,
  order: number,
): TimelineNode => ({
  id,
  parentSessionId,
  parentMessageCount,
  messageCount,
  order,
});

/** Every item of the timeline as `session:position`, read one by one through `at`. */
const items = (timeline: ReturnType<typeof buildTimeline>) =>
  Array.from({ length: timeline.length }, (_, i) => {
    const at = timeline.at(i)!;
    return `${at.sessionId}:${at.lo}`;
  });

describe('buildTimeline', () => {
  const nodes = [
    node('p', null, 0, 4, 0),
    node('a', 'p', 2, 3, 1),
    node('aa', 'a', 1, 2, 2),
    node('b', 'p', 2, 1, 3),
    node('c', 'p', 9, 1, 4), // anchored past the parent's end (messages gone): placed at the end
  ];
  const timeline = buildTimeline('p', nodes);

  it('interleaves sub-sessions after the parent messages that existed when they were made, in creation order', () => {
    expect(timeline.length).toBe(4 + 3 + 2 + 1 + 1);
    expect(items(timeline)).toEqual(['p:0', 'p:1', 'a:0', 'aa:0', 'aa:1', 'a:1', 'a:2', 'b:0', 'p:2', 'p:3', 'c:0']);
    expect(timeline.at(3)).toMatchObject({ sessionId: 'aa', depth: 2 });
    expect(timeline.at(-1)).toBeNull();
    expect(timeline.at(11)).toBeNull();
  });

  it('slices any window into ranges that match the item-by-item walk', () => {
    const all = items(timeline);
    for (let from = 0; from <= timeline.length; from++) {
      for (let to = from; to <= timeline.length; to++) {
        const flat = timeline.slice(from, to).flatMap((r) => Array.from({ length: r.hi - r.lo }, (_, i) => `${r.sessionId}:${r.lo + i}`));
        expect(flat).toEqual(all.slice(from, to));
        // Each range knows its first timeline index.
        let index = from;
        for (const r of timeline.slice(from, to)) {
          expect(r.start).toBe(index);
          index += r.hi - r.lo;
        }
      }
    }
  });

  it('is the session alone without sub-sessions', () => {
    const alone = buildTimeline('x', [node('x', null, 0, 3, 0)]);
    expect(items(alone)).toEqual(['x:0', 'x:1', 'x:2']);
  });
});
