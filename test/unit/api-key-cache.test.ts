import { describe, expect, it } from 'vitest';
import { ApiKeyCache } from '../../src/caches/api-keys.js';

describe('ApiKeyCache (its TTL is the revocation bound)', () => {
  it('trusts a lookup, refusals included, for ttlMs and then asks again', () => {
    const cache = new ApiKeyCache(1_000, 10);
    cache.set('a', 'ws-1', 0);
    cache.set('revoked', null, 0);
    expect(cache.get('a', 1_000)).toBe('ws-1');
    expect(cache.get('revoked', 1_000)).toBeNull();
    expect(cache.get('a', 1_001)).toBeUndefined();
    expect(cache.get('revoked', 1_001)).toBeUndefined();
  });

  it('keeps "does any key exist" under the same TTL, dropped by forget and purge', () => {
    const cache = new ApiKeyCache(1_000, 10);
    cache.setKeysExist(false, 0);
    expect(cache.getKeysExist(1_000)).toBe(false);
    expect(cache.getKeysExist(1_001)).toBeUndefined();
    cache.setKeysExist(true);
    cache.forget('a');
    expect(cache.getKeysExist()).toBeUndefined();
    cache.setKeysExist(true);
    cache.purge();
    expect(cache.getKeysExist()).toBeUndefined();
  });

  it('drops everything when full', () => {
    const cache = new ApiKeyCache(1_000, 2);
    cache.set('a', 'ws', 0);
    cache.set('b', 'ws', 0);
    cache.set('c', 'ws', 0);
    expect(cache.get('a', 0)).toBeUndefined();
    expect(cache.get('c', 0)).toBe('ws');
  });
});
