import { describe, expect, it } from 'vitest';
import type { StoredPart } from '../../src/domain/types.js';
import { FinishedPartsCache } from '../../src/caches/parts.js';

const text = (t: string): StoredPart[] => [{ type: 'text', text: t }];

describe('FinishedPartsCache', () => {
  it('returns what was stored, and evicts the least recently used first when over its size', () => {
    const cache = new FinishedPartsCache(3 * (64 + 10));
    cache.set('a', text('a'.repeat(10)));
    cache.set('b', text('b'.repeat(10)));
    cache.set('c', text('c'.repeat(10)));
    expect(cache.get('a')).toEqual(text('a'.repeat(10)));
    cache.set('d', text('d'.repeat(10)));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual(text('a'.repeat(10)));
    expect(cache.get('c')).toEqual(text('c'.repeat(10)));
    expect(cache.get('d')).toEqual(text('d'.repeat(10)));
  });

  it('forgets the least recently read first, and never holds more than its size', () => {
    const cache = new FinishedPartsCache(2 * (64 + 10));
    cache.set('a', text('a'.repeat(10)));
    cache.set('b', text('b'.repeat(10)));
    cache.get('a');
    cache.get('b');
    // Both were read, a first: a goes.
    cache.set('c', text('c'.repeat(10)));
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map((parts) => parts !== undefined)).toEqual([false, true, true]);
    // Larger than the whole cache: not kept.
    cache.set('huge', text('x'.repeat(1_000)));
    expect(cache.get('huge')).toBeUndefined();
  });

  it('keeps the first parts stored for an id', () => {
    const cache = new FinishedPartsCache();
    cache.set('a', text('first'));
    cache.set('a', text('second'));
    expect(cache.get('a')).toEqual(text('first'));
  });
});
