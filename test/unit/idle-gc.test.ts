import { PerformanceObserver, constants } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HeapSpaceInfo } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { exposeGc, scavengeDue, startIdleGc, youngGeneration } from '../../src/process/idle-gc.js';

/** Keeps the event loop busy for `ms`, in slices of `sliceMs` of synchronous work (timers still run between them). */
async function busyFor(ms: number, sliceMs = 4) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const until = performance.now() + sliceMs;
    while (performance.now() < until) {
      // spin
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('idle-time scavenges', () => {
  it('are due once the young generation is more than the given share full', () => {
    expect(scavengeDue({ used: 25, capacity: 100 }, 0.25)).toBe(false);
    expect(scavengeDue({ used: 26, capacity: 100 }, 0.25)).toBe(true);
    expect(scavengeDue({ used: 0, capacity: 0 }, 0.25)).toBe(false);
  });

  it("read the young generation as V8's new space: used, and used + available as its capacity", () => {
    const space = (space_name: string, used: number, available: number): HeapSpaceInfo => ({
      space_name,
      space_size: 4 * (used + available),
      space_used_size: used,
      space_available_size: available,
      physical_space_size: 0,
    });
    expect(youngGeneration([space('old_space', 900, 100), space('new_space', 3, 5), space('new_large_object_space', 7, 0)])).toEqual({
      used: 3,
      capacity: 8,
    });
    expect(youngGeneration([space('old_space', 900, 100)])).toEqual({ used: 0, capacity: 0 });
  });

  it('scavenge only while the loop is idle, and only when one is due', async () => {
    const calls: unknown[] = [];
    let young = { used: 60, capacity: 100 };
    const idle = startIdleGc({ tickMs: 5, gc: (options) => calls.push(options), young: () => young });
    try {
      await busyFor(80);
      expect(calls).toEqual([]);
      for (let i = 0; i < 100 && calls.length === 0; i++) await sleep(10);
      expect(calls.length).toBeGreaterThan(0);
      expect(calls[0]).toEqual({ type: 'minor' });
      expect(idle.stats.scavenges).toBe(calls.length);

      young = { used: 10, capacity: 100 };
      const before = calls.length;
      await sleep(60);
      expect(calls.length).toBe(before);
    } finally {
      idle.stop();
    }
    const stopped = calls.length;
    await sleep(30);
    expect(calls.length).toBe(stopped);
  });

  it("get V8's real gc(), whose { type: 'minor' } runs a scavenge that empties the young generation of garbage", async () => {
    const kinds: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) kinds.push((entry as { detail?: { kind?: number } }).detail?.kind ?? -1);
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      const gc = exposeGc();
      expect(exposeGc()).toBe(gc);
      // Garbage until the young generation holds at least 1 MB (a scavenge of V8's own may come between).
      let garbage: unknown[] = [];
      for (let i = 0; i < 1_000 && youngGeneration().used < 1 << 20; i++) {
        garbage = [];
        for (let j = 0; j < 1_000; j++) garbage.push({ j, text: `garbage ${j}` });
      }
      garbage = [];
      const before = youngGeneration().used;
      expect(before).toBeGreaterThanOrEqual(1 << 20);
      kinds.length = 0;
      gc({ type: 'minor' });
      expect(youngGeneration().used).toBeLessThan(before / 2);
      // Entries are delivered asynchronously.
      for (let i = 0; i < 50 && !kinds.includes(constants.NODE_PERFORMANCE_GC_MINOR); i++) await sleep(10);
      expect(kinds).toContain(constants.NODE_PERFORMANCE_GC_MINOR);
    } finally {
      observer.disconnect();
    }
  });
});
