import { describe, expect, it } from 'vitest';
import { ApiKeyCache } from '../../src/caches/api-keys.js';

const grant = (workspaceId: string) => ({ workspaceId, scope: 'FULL' as const });

/** A clock the test moves; it starts past 0 (lru-cache reads a start time of 0 as "no TTL"). */
const clock = (start = 10_000) => ({
  t: start,
  now() {
    return this.t;
  },
});

describe('ApiKeyCache (its TTL is the revocation bound)', () => {
  it('trusts a lookup, refusals included, for ttlMs and then asks again', () => {
    const time = clock();
    const cache = new ApiKeyCache(1_000, 10, time);
    cache.set('a', grant('ws-1'));
    cache.set('revoked', null);
    time.t += 1_000;
    expect(cache.get('a')).toEqual(grant('ws-1'));
    expect(cache.get('revoked')).toBeNull();
    time.t += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('revoked')).toBeUndefined();
  });

  it('keeps "does any key exist" under the same TTL, dropped by forget and purge', () => {
    const time = clock();
    const cache = new ApiKeyCache(1_000, 10, time);
    cache.setKeysExist(false);
    time.t += 1_000;
    expect(cache.getKeysExist()).toBe(false);
    time.t += 1;
    expect(cache.getKeysExist()).toBeUndefined();
    cache.setKeysExist(true);
    cache.forget('a');
    expect(cache.getKeysExist()).toBeUndefined();
    cache.setKeysExist(true);
    cache.purge();
    expect(cache.getKeysExist()).toBeUndefined();
  });

  it('forgets the least recently used lookup when full', () => {
    const cache = new ApiKeyCache(1_000, 2, clock());
    cache.set('a', grant('ws'));
    cache.set('b', grant('ws'));
    cache.set('c', grant('ws'));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('c')).toEqual(grant('ws'));
  });

  it('keeps nothing with a TTL of 0', () => {
    const cache = new ApiKeyCache(0, 10, clock());
    cache.set('a', grant('ws'));
    cache.setKeysExist(true);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.getKeysExist()).toBeUndefined();
  });
});
