import { describe, expect, it } from 'vitest';
import { cutPages, joinCutReads, ResponseBudget } from '../../src/domain/content-budget.js';

const size = (n: number) => n;
const pages = (...sizes: number[][]) => sizes.map((rows) => ({ rows }));

describe('content bounds', () => {
  it('keeps what fits the page bound, and a first item larger than it alone', () => {
    expect(cutPages(pages([4, 4, 4], [11, 1], [5, 5]), size, 100, 10)).toEqual({ kept: [2, 1, 2], spent: 8 + 11 + 10 });
  });

  it('shares what is available across pages in order: once it is reached, the pages after it are empty', () => {
    // 6 + 4 = 10 fills it: the second page keeps nothing.
    expect(cutPages(pages([6, 4, 3], [1]), size, 10, 100)).toEqual({ kept: [2, 0], spent: 10 });
    // A first item that starts under it is kept even when it crosses it, and nothing after it.
    expect(cutPages(pages([6], [9, 1], [1]), size, 10, 100)).toEqual({ kept: [1, 1, 0], spent: 15 });
    expect(cutPages(pages([1]), size, 0, 100)).toEqual({ kept: [0], spent: 0 });
  });

  it('reserves at most what is left and settles what was spent, the overshoot included', () => {
    const budget = new ResponseBudget(10);
    expect(budget.reserve(8)).toBe(8);
    expect(budget.reserve(8)).toBe(2);
    expect(budget.reserve(8)).toBe(0);
    budget.settle(8, 3);
    expect(budget.remaining).toBe(5);
    budget.settle(2, 9);
    expect(budget.remaining).toBe(-2);
    expect(budget.reserve(1)).toBe(0);
  });

  it('joins reads into one page that ends at the first read cut short, then cuts it to the page bound', () => {
    const reads = [
      { items: [1, 2], short: false },
      { items: [3], short: true },
      { items: [4], short: false },
    ];
    expect(joinCutReads(reads, false, size, 100)).toEqual({ items: [1, 2, 3], short: true });
    expect(joinCutReads(reads, false, size, 3)).toEqual({ items: [1, 2], short: true });
    // From the end: the last read first, newest items kept, in index order.
    expect(joinCutReads(reads, true, size, 100)).toEqual({ items: [3, 4], short: true });
    expect(joinCutReads([{ items: [1, 2], short: false }], false, size, 100)).toEqual({ items: [1, 2], short: false });
  });
});
