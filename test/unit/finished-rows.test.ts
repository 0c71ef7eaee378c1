import { describe, expect, it } from 'vitest';
import { FinishedRowsCache } from '../../src/caches/finished-rows.js';

const row = (position: number, generating = false) => ({ position, generating, id: `m${position}` });
const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => row(from + i));
const positions = (list: { position: number }[]) => list.map((r) => r.position);

describe('FinishedRowsCache', () => {
  it('joins what touches the run, in any order, and serves ranges newest first', () => {
    const cache = new FinishedRowsCache<ReturnType<typeof row>>();
    cache.add('s', rows(10, 20).reverse());
    cache.add('s', rows(20, 23)); // appended since
    cache.add('s', rows(5, 12)); // older page, overlapping
    expect(cache.range('s')).toEqual({ lo: 5, hi: 23 });
    expect(positions(cache.newestFirst('s', 8, 13))).toEqual([12, 11, 10, 9, 8]);
    expect(cache.size).toBe(18);
    expect(Object.isFrozen(cache.newestFirst('s', 5, 6)[0])).toBe(true);
  });

  it('keeps no generating row: only finished stretches, and a newer stretch apart from the run replaces it', () => {
    const cache = new FinishedRowsCache<ReturnType<typeof row>>();
    cache.add('s', [...rows(0, 5), row(5, true)]);
    expect(cache.range('s')).toEqual({ lo: 0, hi: 5 });
    // Finished since, and more appended: the run grows past the row that was generating.
    cache.add('s', rows(5, 8));
    expect(cache.range('s')).toEqual({ lo: 0, hi: 8 });
    // A stretch that does not touch the run: the newer one is kept.
    cache.add('s', rows(20, 25));
    expect(cache.range('s')).toEqual({ lo: 20, hi: 25 });
    cache.add('s', rows(0, 3));
    expect(cache.range('s')).toEqual({ lo: 20, hi: 25 });
    expect(cache.size).toBe(5);
  });

  it('bounds rows per session (keeping the newest) and in all (forgetting the least recently used session)', () => {
    const cache = new FinishedRowsCache<ReturnType<typeof row>>(25, 10);
    cache.add('a', rows(0, 30));
    expect(cache.range('a')).toEqual({ lo: 20, hi: 30 });
    cache.add('b', rows(0, 10));
    cache.add('c', rows(0, 5));
    cache.newestFirst('a', 25, 26); // a used: b is now the least recently used
    cache.add('d', rows(0, 10));
    expect(cache.range('b')).toBeNull();
    expect(cache.range('a')).not.toBeNull();
    expect(cache.size).toBe(25);
    const none = new FinishedRowsCache<ReturnType<typeof row>>(0);
    none.add('a', rows(0, 3));
    expect(none.range('a')).toBeNull();
    expect(none.size).toBe(0);
  });

  it('bounds by weight when given one: one session keeps its newest rows that fit, others are forgotten least recently used first', () => {
    type Heavy = ReturnType<typeof row> & { chars: number };
    const heavy = (position: number, chars: number): Heavy => ({ ...row(position), chars });
    const cache = new FinishedRowsCache<Heavy>(100, 1_000, (r) => r.chars);
    cache.add('a', [heavy(0, 60), heavy(1, 30), heavy(2, 30)]);
    // 120 does not fit in 100: the oldest row goes.
    expect(cache.range('a')).toEqual({ lo: 1, hi: 3 });
    expect(cache.size).toBe(60);
    cache.add('b', [heavy(0, 50)]);
    // a (60) and b (50) exceed 100: a, used least recently, is forgotten.
    expect(cache.range('a')).toBeNull();
    expect(cache.size).toBe(50);
    cache.add('b', [heavy(1, 200)]);
    // A row heavier than the whole bound is not kept, and leaves the run with nothing that fits after it.
    expect(cache.range('b')).toBeNull();
    expect(cache.size).toBe(0);
  });
});
