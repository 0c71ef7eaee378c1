import { afterAll, describe, expect, it } from 'vitest';
import { LONG_TEXT, TokenPrecount } from '../../src/caches/token-precount.js';
import { countTokens, createBpeCounter } from '../../src/domain/tokens.js';

const precount = new TokenPrecount(16 * LONG_TEXT);
afterAll(() => precount.close());

describe('token counting off the request thread', () => {
  const long = `${'deadbeef'.repeat(LONG_TEXT / 8)} and some words 的一是不了`;

  it('counts long texts in the worker, exactly as in place', async () => {
    const short = 'short text';
    expect(precount.get(long)).toBeUndefined();
    await precount.count([long, short, long]);
    const inPlace = { O200K_BASE: createBpeCounter('O200K_BASE').count(long), CL100K_BASE: createBpeCounter('CL100K_BASE').count(long) };
    expect(precount.get(long)).toEqual(inPlace);
    expect(countTokens(long, 'O200K_BASE', precount)).toBe(inPlace.O200K_BASE);
    expect(precount.get(short)).toBeUndefined();
  });

  it('belongs to its owner: another pre-count knows nothing of it, and a closed one counts nothing', async () => {
    const other = new TokenPrecount(16 * LONG_TEXT);
    expect(other.get(long)).toBeUndefined();
    await other.close();
    await other.count([long]);
    expect(other.get(long)).toBeUndefined();
  });

  it('keeps no text longer than its share: that one is counted in place', async () => {
    const small = new TokenPrecount(LONG_TEXT);
    const longer = `${long} and more`;
    await small.count([longer]);
    expect(small.get(longer)).toBeUndefined();
    await small.close();
  });
});
