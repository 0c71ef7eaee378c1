import { buildSchema, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DEFAULT_QUERY_LIMITS, limitedParse, queryLimitsRule, scanDocumentText } from '../../src/graphql/query-limits.js';

const schema = buildSchema(`
  type Query { node: Node }
  type Node { id: ID  child: Node  name: String }
`);

const codes = (query: string, limits = DEFAULT_QUERY_LIMITS) =>
  validate(schema, parse(query), [queryLimitsRule(limits)]).map((e) => [e.extensions.code, e.message]);

const bomb = (n: number) => {
  const fragments = ['fragment F0 on Node { id name }'];
  for (let i = 1; i <= n; i++) fragments.push(`fragment F${i} on Node { ...F${i - 1} ...F${i - 1} }`);
  return `{ node { ...F${n} } } ${fragments.join(' ')}`;
};

describe('query limits', () => {
  it('counts fields with fragments expanded, measuring each fragment once', () => {
    // node + 2^n * 2 fields.
    expect(codes(bomb(9), { ...DEFAULT_QUERY_LIMITS, maxFields: 1 + 2 ** 10 })).toEqual([]);
    expect(codes(bomb(9), { ...DEFAULT_QUERY_LIMITS, maxFields: 2 ** 10 })).toEqual([
      ['QUERY_TOO_COMPLEX', `This operation selects ${1 + 2 ** 10} fields (at most ${2 ** 10}); split it into smaller ones.`],
    ]);
    const [[code, message]] = codes(bomb(60));
    expect(code).toBe('QUERY_TOO_COMPLEX');
    expect(message).toMatch(/selects \d/);
  });

  it('measures depth through fragments and inline fragments', () => {
    const limits = { ...DEFAULT_QUERY_LIMITS, maxDepth: 3 };
    expect(codes('{ node { child { id } } }', limits)).toEqual([]);
    expect(codes('{ node { ...A } } fragment A on Node { child { ... on Node { child { id } } } }', limits)[0][1]).toMatch(/4 levels deep/);
  });

  it('counts introspection fields toward aliases and fields, with their own depth bound', () => {
    const aliased = `{ ${Array.from({ length: 31 }, (_, i) => `s${i}: __schema { queryType { name } }`).join(' ')} }`;
    expect(codes(aliased)[0][1]).toMatch(/31 aliases/);
    const deepIntrospection = `{ __type(name: "Node") { ${'ofType { '.repeat(18)}name${' }'.repeat(18)} } }`;
    expect(codes(deepIntrospection)).toEqual([]);
    expect(codes(`{ __type(name: "Node") { ${'ofType { '.repeat(20)}name${' }'.repeat(20)} } }`)[0][1]).toMatch(/in introspection/);
  });

  it('counts fragment definitions and spreads across the whole document before measuring', () => {
    const chain = (n: number) =>
      `{ ...F${n - 1} } fragment F0 on Query { node { id } } ${Array.from({ length: n - 1 }, (_, i) => `fragment F${i + 1} on Query { ...F${i} }`).join(' ')}`;
    expect(codes(chain(DEFAULT_QUERY_LIMITS.maxFragments))).toEqual([]);
    expect(codes(chain(2_000))).toEqual([
      ['QUERY_TOO_COMPLEX', 'This operation defines 2000 fragments (at most 64); split it into smaller ones.'],
    ]);
    const repeated = `{ node { ${'...A '.repeat(2_001)} } } fragment A on Node { id }`;
    expect(codes(repeated)[0][1]).toMatch(/spreads fragments 2001 times \(at most 2000\)/);
    // One spread in the operation and 2^11 - 2 below it once expanded: each fragment is written with two.
    expect(codes(bomb(10), { ...DEFAULT_QUERY_LIMITS, maxFields: 10_000 })[0][1]).toMatch(/spreads fragments 2047 times, expanded/);
  });

  it('counts fragment definitions and spreads in the text, outside strings and comments, before parsing', () => {
    const text = '{ a(s: "fragment ...") ...F ... on Q { b } } # fragment ...\nfragment F on Q { ...G } query fragmentless { c }';
    expect(scanDocumentText(text)).toEqual({ nesting: 2, fragments: 1, spreads: 3 });
    expect(() => limitedParse(DEFAULT_QUERY_LIMITS)(`{ a } ${'fragment F on Q { a } '.repeat(65)}`)).toThrow(
      /defines 65 fragments \(at most 64\)/,
    );
    expect(() => limitedParse(DEFAULT_QUERY_LIMITS)(`{ ${'...F '.repeat(2_001)} }`)).toThrow(/spreads fragments 2001 times/);
  });

  it('survives a fragment cycle (graphql-js reports the cycle itself)', () => {
    expect(codes('{ node { ...A } } fragment A on Node { child { ...B } } fragment B on Node { child { ...A } }')).toEqual([]);
  });

  it('measures bracket nesting outside strings, block strings and comments', () => {
    const nesting = (text: string) => scanDocumentText(text).nesting;
    expect(nesting('{ a { b(x: [[1]]) } }')).toBe(5);
    expect(nesting('{ a(s: "{{{\\"{{") }')).toBe(2);
    expect(nesting('{ a(s: """ {{{ \\""" {{ """) }')).toBe(2);
    expect(nesting('# {{{{\n{ a }')).toBe(1);
    expect(() => limitedParse(DEFAULT_QUERY_LIMITS)(`{ ${'a { '.repeat(200)}${'}'.repeat(200)} }`)).toThrow(/nests brackets/);
  });
});
