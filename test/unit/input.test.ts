import { describe, expect, it } from 'vitest';
import { checkJson, checkString, checkTitle } from '../../src/domain/input.js';
import { LIMITS } from '../../src/domain/parts.js';

describe('input rules', () => {
  it('accepts paired surrogates (emoji) and refuses unpaired ones and NUL with the path', () => {
    expect(() => checkString('🍴 fork 👍🏽', 'x')).not.toThrow();
    expect(() => checkString('\uD83C', 'input.title')).toThrow('input.title contains an unpaired UTF-16 surrogate at position 0.');
    expect(() => checkString('ab\uDF74', 'x')).toThrow(/unpaired/);
    expect(() => checkString('\uDF74\uD83C', 'x')).toThrow(/unpaired/);
    expect(() => checkString('a\u0000', 'x')).toThrow(/NUL/);
  });

  it('refuses blank titles', () => {
    expect(() => checkTitle('', 'input.title')).toThrow(/must not be empty/);
    expect(() => checkTitle(' \t\n', 'input.title')).toThrow(/must not be empty/);
    expect(() => checkTitle(' T ', 'input.title')).not.toThrow();
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
