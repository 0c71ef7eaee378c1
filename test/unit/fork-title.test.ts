import { describe, expect, it } from 'vitest';
import { forkNumberOf, forkTitleBase, nextForkTitle } from '../../src/domain/fork-title.js';

describe('forkTitleBase', () => {
  it.each([
    ['T', 'T'],
    ['T (fork 1)', 'T'],
    ['T (fork 12)', 'T'],
    ['T (fork 007)', 'T'],
    // One suffix removed, end-anchored.
    ['T (fork 1) (fork 2)', 'T (fork 1)'],
    ['Q1 (fork 2) Analysis', 'Q1 (fork 2) Analysis'],
    ['X (fork 2) ', 'X (fork 2) '],
    ['X (fork 2)\n', 'X (fork 2)\n'],
    ['X(fork 2)', 'X(fork 2)'],
    ['X  (fork 2)', 'X '],
    ['X (Fork 2)', 'X (Fork 2)'],
    ['X (fork -2)', 'X (fork -2)'],
    ['X (fork 2.5)', 'X (fork 2.5)'],
    ['X (fork )', 'X (fork )'],
    ['X (fork ٣)', 'X (fork ٣)'], // Arabic-Indic digit: not a fork number
    ['', ''],
    [' (fork 1)', ''],
    ['(fork 1)', '(fork 1)'],
    ['line one\nline two (fork 3)', 'line one\nline two'],
    ['שלום עולם (fork 4)', 'שלום עולם'],
    ['🍴 (fork 9)', '🍴'],
  ])('%j has base %j', (title, base) => {
    expect(forkTitleBase(title)).toBe(base);
  });

  it('handles a 10k-character title in linear time', () => {
    const long = 'a'.repeat(10_000);
    expect(forkTitleBase(long)).toBe(long);
    expect(forkTitleBase(`${long} (fork 5)`)).toBe(long);
    // A pathological shape for backtracking engines: many near-miss suffixes.
    const nearMisses = ' (fork 1'.repeat(2_000);
    const started = performance.now();
    expect(forkTitleBase(nearMisses)).toBe(nearMisses);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('forkNumberOf', () => {
  it('reads the number only when the base matches', () => {
    expect(forkNumberOf('T (fork 3)', 'T')).toBe(3n);
    expect(forkNumberOf('T (fork 3)', 'U')).toBeNull();
    expect(forkNumberOf('T', 'T')).toBeNull();
    expect(forkNumberOf('T (fork 1) (fork 2)', 'T')).toBeNull();
    expect(forkNumberOf('T (fork 1) (fork 2)', 'T (fork 1)')).toBe(2n);
    expect(forkNumberOf(' (fork 8)', '')).toBe(8n);
  });

  it('keeps numbers beyond 2^53 exact', () => {
    expect(forkNumberOf('T (fork 123456789012345678901234567890)', 'T')).toBe(123456789012345678901234567890n);
  });
});

describe('nextForkTitle', () => {
  it('is one more than the highest number used, 1 when none', () => {
    expect(nextForkTitle('T', null)).toBe('T (fork 1)');
    expect(nextForkTitle('T', 0n)).toBe('T (fork 1)');
    expect(nextForkTitle('T', 9n)).toBe('T (fork 10)');
    expect(nextForkTitle('', null)).toBe(' (fork 1)');
    expect(nextForkTitle('T', 99999999999999999999n)).toBe('T (fork 100000000000000000000)');
  });

  it('round-trips: the base of the next title is the base', () => {
    for (const base of ['T', '', 'Q1 (fork 2) Analysis', 'X (fork 2) ', 'a\nb', 'مرحبا']) {
      const next = nextForkTitle(base, 4n);
      expect(forkTitleBase(next)).toBe(base);
      expect(forkNumberOf(next, base)).toBe(5n);
    }
  });
});
