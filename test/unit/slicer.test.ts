import { describe, expect, it } from 'vitest';
import { type SlicedWork, Slicer } from '../../src/pubsub/slicer.js';

/** A work of `units` units that logs each one as `name:i`. */
function work(log: string[], name: string, units: number, onUnit?: (i: number) => void): SlicedWork {
  let next = 0;
  return {
    runSlice(budget) {
      const end = Math.min(units, next + budget);
      const start = next;
      while (next < end) {
        log.push(`${name}:${next}`);
        onUnit?.(next);
        next++;
      }
      return end - start;
    },
    unfinished: () => next < units,
  };
}

const range = (name: string, units: number) => Array.from({ length: units }, (_, i) => `${name}:${i}`);
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Waits `ticks` event-loop ticks (a few more than the slicer can need). */
const settle = async (ticks: number) => {
  for (let i = 0; i < ticks; i++) await tick();
};

describe('Slicer', () => {
  it('runs at once within the budget, and the rest a budget per event-loop tick', async () => {
    const log: string[] = [];
    const slicer = new Slicer(4);
    slicer.run(work(log, 'a', 10));
    expect(log).toHaveLength(4);
    // Each tick (the check phase, after the poll phase that handles I/O) runs one slice.
    await tick();
    expect(log).toHaveLength(8);
    await tick();
    expect(log).toEqual(range('a', 10));
  });

  it('hands every unit of a large work out in order across slices', async () => {
    const log: string[] = [];
    const slicer = new Slicer(7);
    slicer.later(work(log, 'a', 100));
    expect(log).toEqual([]);
    await settle(20);
    expect(log).toEqual(range('a', 100));
  });

  it('never lets a work overtake one queued before it, nor one handed in while another runs', async () => {
    const log: string[] = [];
    const slicer = new Slicer(3);
    // `b` hands in `c` while it runs: `c` goes behind `b` (and behind `d`, queued before it).
    slicer.later(work(log, 'a', 2));
    slicer.later(
      work(log, 'b', 4, (i) => {
        if (i === 0) slicer.run(work(log, 'c', 2));
      }),
    );
    slicer.run(work(log, 'd', 1));
    expect(log).toEqual([]);
    await settle(6);
    expect(log).toEqual(['a:0', 'a:1', 'b:0', 'b:1', 'b:2', 'b:3', 'd:0', 'c:0', 'c:1']);
  });

  it('resets its budget each tick, and is idle (no timer) once its queue is empty', async () => {
    const log: string[] = [];
    const slicer = new Slicer(2);
    slicer.run(work(log, 'a', 1));
    slicer.run(work(log, 'b', 1));
    slicer.run(work(log, 'c', 1));
    expect(log).toEqual(['a:0', 'b:0']);
    await settle(2);
    expect(log).toEqual(['a:0', 'b:0', 'c:0']);
    await settle(2);
    slicer.run(work(log, 'd', 2));
    expect(log).toEqual(['a:0', 'b:0', 'c:0', 'd:0', 'd:1']);
  });
});
