import { afterAll, describe, expect, it } from 'vitest';
import { LONG_TEXT, precount, precounted, stopTokenWorker } from '../../src/domain/token-precount.js';
import { countTokens, createBpeCounter } from '../../src/domain/tokens.js';

afterAll(stopTokenWorker);

describe('token counting off the request thread', () => {
  it('counts long texts in the worker, exactly as in place', async () => {
    const long = `${'deadbeef'.repeat(LONG_TEXT / 8)} and some words 的一是不了`;
    const short = 'short text';
    expect(precounted(long)).toBeUndefined();
    await precount([long, short, long]);
    const inPlace = { O200K_BASE: createBpeCounter('O200K_BASE').count(long), CL100K_BASE: createBpeCounter('CL100K_BASE').count(long) };
    expect(precounted(long)).toEqual(inPlace);
    expect(countTokens(long, 'O200K_BASE')).toBe(inPlace.O200K_BASE);
    expect(precounted(short)).toBeUndefined();
  });
});
