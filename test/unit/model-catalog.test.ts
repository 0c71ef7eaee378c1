import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { loadModelCatalog } from '../../src/domain/model-catalog.js';
import { reportCost, weakestCostSource, zeroUsage } from '../../src/domain/turns.js';

const catalog = await loadModelCatalog();

describe('the model catalog', () => {
  it('finds a model by its id, a dated snapshot, a provider prefix, and the format provider first', () => {
    expect(catalog.lookup('claude-sonnet-4-5')).toMatchObject({ provider: 'anthropic', id: 'claude-sonnet-4-5', contextWindow: 200_000 });
    expect(catalog.lookup('claude-sonnet-4-5-20250929')?.id).toBe('claude-sonnet-4-5');
    expect(catalog.lookup('openai:gpt-4o-2024-08-06')).toMatchObject({ provider: 'openai', id: 'gpt-4o' });
    expect(catalog.lookup('models/gemini-2.5-flash')?.provider).toBe('google');
    // Gemini's format tries Google first, whose Vertex AI list has Claude models.
    expect(catalog.lookup('claude-sonnet-4-5', 'GEMINI')?.provider).toBe('google');
    expect(catalog.lookup('no-such-model')).toBeNull();
  });

  it('reserves 16,384 tokens, or a quarter of a small window, and refuses a reserve that leaves nothing', () => {
    const sonnet = catalog.lookup('claude-sonnet-4-5')!;
    expect(catalog.defaultMaxTokens(sonnet)).toBe(200_000 - 16_384);
    expect(catalog.defaultMaxTokens(sonnet, 0)).toBe(200_000);
    expect(catalog.defaultMaxTokens(catalog.lookup('gpt-4')!)).toBe(8_192 - 2_048);
    expect(() => catalog.defaultMaxTokens(sonnet, 200_000)).toThrow(DomainError);
    expect(() => catalog.budget({ model: 'x'.repeat(201), maxTokens: null, outputReserve: null, format: null })).toThrow(/1 to 200/);
  });

  it('splits an estimate at the cache-read rate, on the tier of the whole call', () => {
    const sonnet = catalog.lookup('claude-sonnet-4-5')!;
    const small = catalog.estimateInput(sonnet, 10_000, 8_000, new Date('2026-11-01'));
    expect(small.inputCost).toBeCloseTo((2_000 * 3) / 1e6, 12);
    expect(small.cachedInputCost).toBeCloseTo((8_000 * 0.3) / 1e6, 12);
    // Above 200k input tokens the whole call is on the long-context tier ($6, $0.60).
    const large = catalog.estimateInput(sonnet, 300_000, 250_000, new Date('2026-11-01'));
    expect(large.inputCost).toBeCloseTo((50_000 * 6) / 1e6, 12);
    expect(large.cachedInputCost).toBeCloseTo((250_000 * 0.6) / 1e6, 12);
    expect(catalog.estimateInput(sonnet, 0, 0).total).toBe(0);
  });

  it('prices a report only without a cost and with a known model; sums take the weakest source', () => {
    const usage = { ...zeroUsage(), inputTokens: 1_000n, outputTokens: 100n, cost: 0.5 };
    const at = new Date('2026-11-01');
    expect(reportCost(usage, true, 'gpt-4o', catalog, at)).toEqual({ cost: 0.5, costSource: 'REPORTED' });
    expect(reportCost(usage, false, 'gpt-4o', catalog, at).costSource).toBe('CATALOG');
    expect(reportCost(usage, false, 'gpt-4o', catalog, at).cost).toBeCloseTo((1_000 * 2.5 + 100 * 10) / 1e6, 12);
    expect(reportCost(usage, false, 'my-model', catalog, at)).toEqual({ cost: 0, costSource: 'UNKNOWN' });
    expect(reportCost(usage, false, null, null, at)).toEqual({ cost: 0, costSource: 'UNKNOWN' });
    expect(weakestCostSource([])).toBe('REPORTED');
    expect(weakestCostSource(['REPORTED', 'CATALOG', null])).toBe('CATALOG');
    expect(weakestCostSource(['CATALOG', 'UNKNOWN', 'REPORTED'])).toBe('UNKNOWN');
  });
});
