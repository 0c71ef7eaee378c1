import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  runAssembly,
  buildPayload,
  canonicalJson,
  contextHash,
  type AssembledMessage,
  type ContextFormat,
} from '../../../src/domain/assembly/index.js';
import { seal, writeCanonicalJson } from '../../../src/domain/assembly/hash.js';
import { isImmutable, markImmutable } from '../../../src/domain/immutable.js';
import type { DomainMessage, TokenEncoding } from '../../../src/domain/types.js';
import { call, generateSession, makeInput, msg, result, rng, text } from './helpers.js';

const FORMATS: ContextFormat[] = ['OPENAI_CHAT', 'ANTHROPIC_MESSAGES', 'GENERIC'];

/** What writeCanonicalJson writes, as one string. */
function written(value: unknown): string {
  const chunks: string[] = [];
  writeCanonicalJson(value, { text: (json) => chunks.push(json), bytes: (utf8) => chunks.push(utf8.toString('utf8')) });
  return chunks.join('');
}

/** A random JSON-ish value: nested objects with unordered keys, arrays, strings with escapes and non-BMP text, odd members. */
function randomValue(random: () => number, depth = 0): unknown {
  const r = random();
  if (depth > 3 || r < 0.3) {
    const leaves = [
      '',
      'plain',
      'quote " and \\ backslash',
      'line\nbreak\u2028',
      '日本語 🎉',
      0,
      -1.5,
      1e21,
      NaN,
      Infinity,
      true,
      false,
      null,
    ];
    return leaves[Math.floor(random() * leaves.length)];
  }
  if (r < 0.55)
    return Array.from({ length: Math.floor(random() * 4) }, () => (random() < 0.1 ? undefined : randomValue(random, depth + 1)));
  if (r < 0.6) return new Date(Math.floor(random() * 1e12));
  const keys = ['b', 'a', 'é', 'Z', '10', '2', '\ud83c\udf89', 'aa', ''];
  const out: Record<string, unknown> = {};
  for (const key of keys) if (random() < 0.4) out[key] = random() < 0.1 ? undefined : randomValue(random, depth + 1);
  if (random() < 0.2) out.fn = () => 1;
  // Some sub-values are sealed, as payload pieces are.
  return random() < 0.3 ? seal(out) : out;
}

/** RFC 8785 written the plain way, to check canonicalJson against. */
function reference(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return reference((value as { toJSON: () => unknown }).toJSON());
  }
  if (Array.isArray(value)) return `[${value.map((v) => reference(v) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .flatMap((k) => {
        const json = reference((value as Record<string, unknown>)[k]);
        return json === undefined ? [] : [`${JSON.stringify(k)}:${json}`];
      });
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

describe('canonicalJson', () => {
  it('is RFC 8785: keys in code-unit order, array-index keys too', () => {
    expect(canonicalJson({ b: 1, 10: 2, 2: 3, a: { '1': 0, '0': 1 } })).toBe('{"10":2,"2":3,"a":{"0":1,"1":0},"b":1}');
    const random = rng(3);
    for (let i = 0; i < 500; i++) {
      const value = randomValue(random);
      expect(canonicalJson(value)).toBe(reference(value));
    }
  });
});

describe('writeCanonicalJson', () => {
  it('writes exactly canonicalJson, sealed parts included', () => {
    const random = rng(11);
    for (let i = 0; i < 500; i++) {
      const value = randomValue(random);
      expect(written(value)).toBe(canonicalJson(value));
      // A second time the sealed parts come from their kept bytes.
      expect(written(value)).toBe(canonicalJson(value));
    }
  });

  it('refuses cycles and bigints as canonicalJson does', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => written(cyclic)).toThrow(TypeError);
    expect(() => written({ n: [1n] })).toThrow(TypeError);
  });
});

describe('seal and markImmutable', () => {
  it('deep-freeze: a sealed piece cannot be changed, so its kept JSON cannot go stale', () => {
    const piece = seal({ content: [{ text: 'a', type: 'text' }], role: 'user' });
    expect(isImmutable(piece)).toBe(true);
    expect(() => {
      (piece.content[0] as { text: string }).text = 'b';
    }).toThrow(TypeError);
    expect(() => {
      piece.content.push({ text: 'c', type: 'text' });
    }).toThrow(TypeError);
    expect(written({ x: piece })).toBe('{"x":{"content":[{"text":"a","type":"text"}],"role":"user"}}');
  });
});

/** A conversation that exercises every piece: multi-part messages, parallel calls, errors, SYSTEM, merges in Anthropic. */
function conversation(): DomainMessage[] {
  return [
    msg(0, 'SYSTEM', [text('Be brief.')]),
    msg(1, 'USER', [text('first '), text('second "quoted"')]),
    msg(2, 'ASSISTANT', [text('Looking.'), call('c1', 'search', { q: 'x', b: [1, { z: 1, a: 2 }] }), call('c2', 'noargs', 'plain')]),
    msg(3, 'TOOL', [result('c1', 'one'), result('c2', 'two', true), text('a note from the tool runner')]),
    msg(4, 'USER', [text('and 日本語 🎉')]),
    msg(5, 'ASSISTANT', [text('')]),
    msg(6, 'ASSISTANT', [text('Done.')]),
    msg(7, 'USER', [text('thanks')]),
  ];
}

const assembled = (messages: DomainMessage[]): AssembledMessage[] =>
  messages.map((m) => ({
    role: m.role,
    kind: 'message' as const,
    parts: m.parts as AssembledMessage['parts'],
    sourceMessageId: m.id,
    sourceIndex: m.index,
    tokenCount: 0,
  }));

const hashOf = (payload: unknown, encoding: TokenEncoding, format: ContextFormat) =>
  createHash('sha256').update(canonicalJson({ encoding, format, payload })).digest('hex');

describe('payload pieces of immutable messages', () => {
  for (const format of FORMATS) {
    it(`${format}: built once, shared, and the payload and hash are the same as from plain parts`, () => {
      const plain = conversation();
      const frozen = conversation().map((m) => ({ ...m, parts: markImmutable(m.parts) }));
      const expected = buildPayload(format, assembled(plain));
      const first = buildPayload(format, assembled(frozen));
      const second = buildPayload(format, assembled(frozen));
      expect(first).toEqual(expected);
      expect(second).toEqual(expected);
      // The second payload reuses the first one's message objects (all but merged Anthropic turns).
      const messagesOf = (p: unknown) => (p as { messages: object[] }).messages;
      const shared = messagesOf(second).filter((m, i) => m === messagesOf(first)[i]);
      expect(shared.length).toBeGreaterThan(0);
      for (const payload of [expected, first, second]) {
        expect(contextHash(payload, 'O200K_BASE', format)).toBe(hashOf(expected, 'O200K_BASE', format));
      }
    });
  }

  it('ANTHROPIC_MESSAGES: merging turns copies, so a shared piece is never extended', () => {
    const frozen = [
      msg(0, 'USER', [text('one')]),
      msg(1, 'ASSISTANT', [call('c1')]),
      msg(2, 'TOOL', [result('c1')]),
      msg(3, 'USER', [text('two')]),
    ].map((m) => ({ ...m, parts: markImmutable(m.parts) }));
    const alone = buildPayload('ANTHROPIC_MESSAGES', assembled([frozen[2]])) as { messages: { content: unknown[] }[] };
    const merged = buildPayload('ANTHROPIC_MESSAGES', assembled(frozen)) as { messages: { content: unknown[] }[] };
    expect(merged.messages.map((m) => m.content.length)).toEqual([1, 1, 2]);
    const again = buildPayload('ANTHROPIC_MESSAGES', assembled([frozen[2]])) as { messages: { content: unknown[] }[] };
    expect(again.messages[0]).toBe(alone.messages[0]);
    expect(again.messages[0].content).toHaveLength(1);
  });
});

describe('assembleContext over immutable parts', () => {
  it('gives the same payload, hash and counts as over plain parts, on every call', () => {
    const plain = generateSession(600, 5);
    const frozen = generateSession(600, 5).map((m) => ({ ...m, parts: markImmutable(m.parts) }));
    for (const format of FORMATS) {
      for (const maxTokens of [null, 4_000, 20_000]) {
        const options = { format, maxTokens, system: 'You help.', turnContext: { cwd: '/repo' } };
        const expected = runAssembly(makeInput(plain, options));
        expect(expected.contextHash).toBe(hashOf(expected.payload, expected.encoding, format));
        for (let run = 0; run < 2; run++) {
          const got = runAssembly(makeInput(frozen, options));
          expect(got.contextHash, `${format} ${maxTokens} run ${run}`).toBe(expected.contextHash);
          expect(got.payload).toEqual(expected.payload);
          expect(got.tokenCount).toBe(expected.tokenCount);
        }
      }
    }
  });

  it('builds the stubs of an elided finished message once: later assemblies send the same frozen parts and payload piece', () => {
    const frozen = generateSession(600, 5).map((m) => ({ ...m, parts: markImmutable(m.parts) }));
    const options = { format: 'OPENAI_CHAT' as const, maxTokens: null, keepToolCallRounds: 1 };
    const first = runAssembly(makeInput(frozen, options));
    const second = runAssembly(makeInput(frozen, options));
    const elided = (m: AssembledMessage) => m.parts.some((p) => p.type === 'toolResult' && p.elided);
    const firstElided = first.messages.filter(elided);
    expect(firstElided.length).toBeGreaterThan(10);
    const secondElided = second.messages.filter(elided);
    expect(secondElided.map((m) => m.sourceMessageId)).toEqual(firstElided.map((m) => m.sourceMessageId));
    for (let i = 0; i < firstElided.length; i++) {
      expect(secondElided[i].parts).toBe(firstElided[i].parts);
      expect(isImmutable(secondElided[i].parts)).toBe(true);
    }
    const toolMessages = (p: unknown) => (p as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'tool');
    const stubs = toolMessages(first.payload).filter((m) => m.content.startsWith('[tool result elided'));
    expect(stubs.length).toBeGreaterThan(10);
    const again = new Set(toolMessages(second.payload));
    for (const stub of stubs) expect(again.has(stub)).toBe(true);
  });
});
