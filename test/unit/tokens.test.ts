import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { checkTokenizerShape, countTokens, createBpeCounter, LONG_PIECE } from '../../src/domain/tokens.js';

/**
 * The heap merge must give exactly gpt-tokenizer's tokens. A counter with `longPiece = 0` sends
 * every piece that is not itself a token through the heap merge, so these strings exercise it on
 * thousands of pieces; gpt-tokenizer's quadratic merge is the reference (hence strings it can
 * finish quickly).
 */
const reference = {
  O200K_BASE: (text: string) => encodeO200k(text, { disallowedSpecial: new Set() }),
  CL100K_BASE: (text: string) => encodeCl100k(text, { disallowedSpecial: new Set() }),
};

// A deterministic generator, so a failure can be replayed.
function random(seed: number) {
  // mulberry32
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const ALPHABETS = [
  'abcdefghijklmnopqrstuvwxyz',
  'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=',
  ' \t\n\r',
  '.,;:!?()[]{}<>"\'`~@#$%^&*-_+=|\\/',
  'éèêàçñöüßøåæœ',
  '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手',
  'ابتثجحخدذرسش',
  'абвгдеёжзийклмнопрстуфхцчшщъыьэюя',
  '😀🙂🍴🚀👍🏽🇫🇷',
  '0123456789',
  "'s't're've'm'll'd",
  'xX',
];

function randomText(next: () => number, maxLength: number): string {
  let text = '';
  const length = Math.floor(next() * maxLength);
  while (text.length < length) {
    const alphabet = Array.from(ALPHABETS[Math.floor(next() * ALPHABETS.length)]);
    // Runs of one alphabet make long pieces; single characters mix classes at piece boundaries.
    const run = next() < 0.3 ? 1 + Math.floor(next() * 400) : 1 + Math.floor(next() * 8);
    const repeat = next() < 0.2;
    const one = alphabet[Math.floor(next() * alphabet.length)];
    for (let i = 0; i < run; i++) text += repeat ? one : alphabet[Math.floor(next() * alphabet.length)];
  }
  return text;
}

describe.each(['O200K_BASE', 'CL100K_BASE'] as const)('%s heap merge', (encoding) => {
  const everyPiece = createBpeCounter(encoding, 0);

  // The reference is quadratic and the suite shares two cores: a generous timeout, not a timed test.
  it('gives the same tokens as gpt-tokenizer on 3,000 random strings', { timeout: 180_000 }, () => {
    const next = random(encoding === 'O200K_BASE' ? 11 : 12);
    for (let i = 0; i < 3000; i++) {
      const text = randomText(next, i < 2700 ? 60 : 1200);
      const expected = reference[encoding](text);
      const actual = everyPiece.encode(text);
      if (actual.length !== expected.length || actual.some((t, k) => t !== expected[k])) {
        expect({ text, actual }).toEqual({ text, expected });
      }
      expect(everyPiece.count(text)).toBe(expected.length);
    }
  });

  it.each([
    ['a long run of one letter', 'x'.repeat(3000)],
    ['a long run of spaces', `${' '.repeat(3000)}x`],
    ['base64', Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 256)).toString('base64')],
    ['a hex hash run', 'deadbeef'.repeat(400)],
    ['CJK without spaces', '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要'.repeat(60)],
    ['punctuation', '=-'.repeat(1500)],
    ['minified code', 'function(a,b){return a.map(function(c){return c*b})}'.repeat(60)],
    ['an emoji run', '🍴'.repeat(1000)],
    ['upper then lower', `${'A'.repeat(1500)}${'b'.repeat(1500)}`],
  ])('gives the same tokens on %s', (_name, text) => {
    expect(everyPiece.encode(text)).toEqual(reference[encoding](text));
    expect(countTokens(text, encoding)).toBe(reference[encoding](text).length);
  });

  it('counts a 5 MiB run without spaces consistently with its parts', { timeout: 180_000 }, () => {
    // One piece of 5 MiB. gpt-tokenizer cannot finish this (quadratic); the count must agree with
    // the periodic structure the reference shows on shorter runs: the same tokens repeat.
    const period = reference[encoding]('x'.repeat(4096));
    const size = 5 * 1024 * 1024;
    const perToken = 4096 / period.length;
    expect(Number.isInteger(perToken)).toBe(true);
    expect(countTokens('x'.repeat(size), encoding)).toBe(size / perToken);
    expect(countTokens(`${'x'.repeat(LONG_PIECE + 1)}`, encoding)).toBe(reference[encoding]('x'.repeat(LONG_PIECE + 1)).length);
  });
});

describe('the tokenizer adapter', () => {
  it('finds the encoder methods it relies on in the pinned gpt-tokenizer, at start', () => {
    expect(() => checkTokenizerShape()).not.toThrow();
  });
});
