import { describe, expect, it } from 'vitest';
import { checkJson, checkString, checkTitle } from '../../src/domain/input.js';
import { LIMITS } from '../../src/domain/limits.js';

describe('input rules', () => {
  it('accepts paired surrogates (emoji) and refuses unpaired ones and NUL with the path', () => {
    expect(() => checkString('🍴 fork 👍🏽', 'x', 100)).not.toThrow();
    expect(() => checkString('\uD83C', 'input.title', 100)).toThrow('input.title contains an unpaired UTF-16 surrogate at position 0.');
    expect(() => checkString('ab\uDF74', 'x', 100)).toThrow(/unpaired/);
    expect(() => checkString('\uDF74\uD83C', 'x', 100)).toThrow(/unpaired/);
    expect(() => checkString('a\u0000', 'x', 100)).toThrow(/NUL/);
    expect(() => checkString('x'.repeat(101), 'input.text', 100)).toThrow('input.text is longer than 100 characters.');
  });

  it('refuses blank titles', () => {
    expect(() => checkTitle('', 'input.title', 100)).toThrow(/must not be empty/);
    expect(() => checkTitle(' \t\n', 'input.title', 100)).toThrow(/must not be empty/);
    expect(() => checkTitle(' T ', 'input.title', 100)).not.toThrow();
  });

  it('checks JSON iteratively: depth, size, keys, values, non-JSON objects', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => checkJson(deep, 'input.settings')).toThrow(`input.settings is nested more than ${LIMITS.jsonDepth} levels deep.`);
    let ok: unknown = 1;
    for (let i = 0; i < LIMITS.jsonDepth; i++) ok = { a: ok };
    expect(() => checkJson(ok, 'x')).not.toThrow();
    expect(() => checkJson({ a: [1, { 'b\u0000': 2 }] }, 'input.metadata')).toThrow('input.metadata.a[1] (a key) contains a NUL');
    expect(() => checkJson(JSON.parse('{"x": {"__proto__": 1}}'), 'input.settings')).toThrow(
      'input.settings.x.__proto__: the key "__proto__" is not allowed.',
    );
    expect(() => checkJson({ f: new Blob(['x']) }, 'input.settings')).toThrow('input.settings.f is not a JSON value.');
    expect(() => checkJson({ s: 'x'.repeat(LIMITS.jsonLength) }, 'input.settings')).toThrow(/larger than/);
    expect(checkJson({ model: 'gpt', n: [1, 2.5, null, true] }, 'x')).toBeGreaterThan(0);
  });
});
