/**
 * The model catalog: context windows and prices of named models, from `@pydantic/genai-prices`
 * (docs/models.md says why that package). Its data ships inside the package and is never updated at
 * run time (its `updatePrices` is not called), so every answer is a function of the model name, the
 * usage and the date: no network, and the same answer on every server instance.
 *
 * Names are the providers' API model ids (`claude-sonnet-4-5`, `gpt-5`, `gemini-2.5-flash`; a dated
 * snapshot such as `claude-sonnet-4-5-20250929` finds its family), optionally prefixed by the
 * provider (`anthropic/claude-sonnet-4-5`, `openai:gpt-5`); Gemini's `models/` prefix is dropped.
 * Without a prefix, the provider of the requested format is tried first, then the catalog's own
 * matching over every provider.
 */
import type { PriceCalculation, Provider } from '@pydantic/genai-prices';
import { LRUCache } from 'lru-cache';
import type { ContextFormat, EstimatedCost } from './assembly/types.js';
import { badInput } from './errors.js';

/** The package the catalog is read from, named in messages and docs. */
export const CATALOG_PACKAGE = '@pydantic/genai-prices';
/** Every price in the catalog is in US dollars. */
export const CATALOG_CURRENCY = 'USD';

/**
 * The output reserve when none is given: 16,384 tokens, or a quarter of the window when that is
 * smaller. The catalog has no maximum output per model, and a model's maximum (64k, 128k) would
 * leave a long conversation far less room than most calls use; 16,384 covers a long answer with
 * room for reasoning.
 */
export const DEFAULT_OUTPUT_RESERVE = 16_384;

/** The longest model name looked up (longer ones are refused before any matching). */
export const MAX_MODEL_NAME = 200;

/** The providers searched for close matches and by `modelCatalog`: those of the formats assembly sends. */
export const SEARCHED_PROVIDERS = ['anthropic', 'openai', 'google'] as const;

const FORMAT_PROVIDER: Record<ContextFormat, string | null> = {
  GENERIC: null,
  OPENAI_CHAT: 'openai',
  OPENAI_RESPONSES: 'openai',
  ANTHROPIC_MESSAGES: 'anthropic',
  GEMINI: 'google',
};

/** A model found in the catalog. */
export interface CatalogModel {
  /** The catalog's provider id (`anthropic`, `openai`, `google`, …). */
  provider: string;
  /** The catalog's id of the model family the name matched. */
  id: string;
  /** Its display name. */
  name: string;
  /** Input and output tokens one call may hold together, when the catalog knows it. */
  contextWindow: number | null;
  /** Price per million tokens at the base tier, null when the catalog has none. */
  prices: { input: number | null; output: number | null; cacheRead: number | null; cacheWrite: number | null };
}

/** Token counts of one model call, as `reportUsage` takes them: inputTokens excludes the cached ones. */
export interface PricedUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

type GenaiPrices = typeof import('@pydantic/genai-prices');

/**
 * The catalog, once loaded. Lookups are memoized by name (a pure function of constant data), within
 * a bound, since names come from clients.
 */
export class ModelCatalog {
  private readonly found = new LRUCache<string, { model: CatalogModel; providerId: string } | { unknown: true }>({ max: 1_000 });

  constructor(private readonly prices: GenaiPrices) {}

  /** The model a name stands for, or null when the catalog has none. */
  lookup(name: string, format: ContextFormat | null = null): CatalogModel | null {
    return this.resolve(name, format)?.model ?? null;
  }

  /** The model a name stands for; BAD_USER_INPUT naming close matches when the catalog has none. */
  require(name: string, format: ContextFormat | null = null, field = 'model'): CatalogModel {
    if (!name.trim() || name.length > MAX_MODEL_NAME) {
      throw badInput(`${field} must be a model name of 1 to ${MAX_MODEL_NAME} characters.`, { field });
    }
    const model = this.lookup(name, format);
    if (model) return model;
    const close = this.closeMatches(name);
    throw badInput(
      `The model catalog (${CATALOG_PACKAGE}) has no model "${name}". ` +
        (close.length ? `Close matches: ${close.join(', ')}. ` : '') +
        `Use the provider's API model id (such as claude-sonnet-4-5, gpt-5 or gemini-2.5-flash), optionally prefixed by its provider ("anthropic/claude-sonnet-4-5"); the modelCatalog(search:) query lists the names.`,
      { field, closeMatches: close },
    );
  }

  /**
   * The token budget a call to `model` leaves its input: the context window less `outputReserve`
   * (default: DEFAULT_OUTPUT_RESERVE, or a quarter of the window when smaller). BAD_USER_INPUT when
   * the catalog has no window for it or the reserve leaves nothing.
   */
  defaultMaxTokens(model: CatalogModel, outputReserve: number | null = null): number {
    const window = model.contextWindow;
    if (window === null) {
      throw badInput(`The model catalog (${CATALOG_PACKAGE}) gives no context window for ${model.provider}/${model.id}: pass maxTokens.`, {
        field: 'maxTokens',
      });
    }
    const reserve = outputReserve ?? Math.min(DEFAULT_OUTPUT_RESERVE, Math.floor(window / 4));
    if (reserve >= window) {
      throw badInput(`outputReserve (${reserve}) must be less than the context window of ${model.provider}/${model.id} (${window}).`, {
        field: 'outputReserve',
      });
    }
    return window - reserve;
  }

  /**
   * The model a request names and the token budget it gets: `maxTokens` when given, else the
   * default (`defaultMaxTokens`, with `outputReserve`, a whole number of at least 0).
   */
  budget(request: { model: string; maxTokens: number | null; outputReserve: number | null; format: ContextFormat | null }): {
    model: CatalogModel;
    maxTokens: number;
  } {
    const { outputReserve } = request;
    if (outputReserve !== null && (!Number.isInteger(outputReserve) || outputReserve < 0)) {
      throw badInput(`outputReserve must be a whole number of at least 0 (got ${outputReserve}).`, { field: 'outputReserve' });
    }
    const model = this.require(request.model, request.format);
    return { model, maxTokens: request.maxTokens ?? this.defaultMaxTokens(model, outputReserve) };
  }

  /** The cost of one call's usage from the catalog, in CATALOG_CURRENCY; null when the model is unknown. */
  priceUsage(name: string, usage: PricedUsage, at: Date = new Date()): number | null {
    const found = this.resolve(name, null);
    if (!found) return null;
    const result = this.calc(
      found,
      {
        input_tokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
        cache_read_tokens: usage.cacheReadTokens,
        cache_write_tokens: usage.cacheWriteTokens,
        output_tokens: usage.outputTokens,
      },
      at,
    );
    return result ? result.total_price : null;
  }

  /**
   * What sending `inputTokens` to `model` costs, the first `reusedTokens` of them read from the
   * provider's cache. The package prices a call as a whole (a tier is chosen by the call's input
   * tokens), so the split comes from two of its prices of the same call: with the reused tokens at
   * the cache-read rate, and with none; the uncached part is its share of the second.
   */
  estimateInput(model: CatalogModel, inputTokens: number, reusedTokens: number, at: Date = new Date()): EstimatedCost {
    const n = Math.max(0, inputTokens);
    const reused = Math.min(Math.max(0, reusedTokens), n);
    const priced = `${model.provider}/${model.id}`;
    if (n === 0) return { model: priced, inputCost: 0, cachedInputCost: 0, total: 0, currency: CATALOG_CURRENCY };
    const found = { model, providerId: model.provider };
    const withCache = this.calc(found, { input_tokens: n, cache_read_tokens: reused }, at)?.input_price ?? 0;
    const uncached = this.calc(found, { input_tokens: n }, at)?.input_price ?? 0;
    const inputCost = (uncached * (n - reused)) / n;
    const cachedInputCost = Math.max(0, withCache - inputCost);
    return { model: priced, inputCost, cachedInputCost, total: inputCost + cachedInputCost, currency: CATALOG_CURRENCY };
  }

  /**
   * Models whose id or name contains every word of `search` (case-insensitive), among the providers
   * of SEARCHED_PROVIDERS (or `provider` alone), newest families first as the catalog lists them.
   */
  search(search: string, provider: string | null = null, limit = 20): CatalogModel[] {
    const words = search.toLowerCase().split(/\s+/).filter(Boolean);
    const out: CatalogModel[] = [];
    for (const p of this.providers(provider)) {
      for (const m of p.models) {
        const text = `${p.id}/${m.id} ${m.name ?? ''}`.toLowerCase();
        if (!words.every((w) => text.includes(w))) continue;
        const priced = this.prices.calcPrice({ input_tokens: 0 }, m.id, { providerId: p.id });
        out.push(toModel(p, m, priced?.model_price ?? {}));
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /** Up to five catalog ids nearest to `name` (edit distance), among SEARCHED_PROVIDERS and a named provider. */
  closeMatches(name: string, count = 5): string[] {
    const { providerId, model } = splitName(name);
    const wanted = model.toLowerCase();
    const scored: Array<{ id: string; score: number }> = [];
    for (const p of this.providers(providerId && this.prices.findProvider({ providerId }) ? providerId : null)) {
      for (const m of p.models) scored.push({ id: `${p.id}/${m.id}`, score: editDistance(wanted, m.id.toLowerCase()) });
    }
    scored.sort((a, b) => a.score - b.score || a.id.localeCompare(b.id));
    return scored.slice(0, count).map((s) => s.id);
  }

  private providers(only: string | null): Provider[] {
    const ids = only ? [only] : SEARCHED_PROVIDERS;
    return ids.flatMap((id) => this.prices.findProvider({ providerId: id }) ?? []);
  }

  private resolve(name: string, format: ContextFormat | null) {
    const key = `${format ?? ''}\u0000${name}`;
    const memo = this.found.get(key);
    if (memo) return 'unknown' in memo ? null : memo;
    const found = this.match(name, format);
    this.found.set(key, found ?? { unknown: true });
    return found;
  }

  private match(name: string, format: ContextFormat | null): { model: CatalogModel; providerId: string } | null {
    const { providerId, model } = splitName(name.trim());
    if (!model) return null;
    const tries: Array<string | undefined> = [];
    if (providerId && this.prices.findProvider({ providerId })) tries.push(providerId);
    else {
      const hinted = format ? FORMAT_PROVIDER[format] : null;
      if (hinted) tries.push(hinted);
      tries.push(undefined);
    }
    const id = providerId && !this.prices.findProvider({ providerId }) ? name.trim() : model;
    for (const p of tries) {
      const result = this.prices.calcPrice({ input_tokens: 0 }, id, p ? { providerId: p } : undefined);
      if (result) return { model: toModel(result.provider, result.model, result.model_price), providerId: result.provider.id };
    }
    return null;
  }

  private calc(found: { model: CatalogModel; providerId: string }, usage: Record<string, number>, at: Date): PriceCalculation | null {
    return this.prices.calcPrice(usage, found.model.id, { providerId: found.providerId, timestamp: at });
  }
}

/** `provider/model` or `provider:model` split at the first separator; Gemini's `models/` prefix dropped. */
function splitName(name: string): { providerId: string | null; model: string } {
  const bare = name.startsWith('models/') ? name.slice('models/'.length) : name;
  const cut = bare.search(/[/:]/);
  if (cut <= 0) return { providerId: null, model: bare };
  return { providerId: bare.slice(0, cut).toLowerCase(), model: bare.slice(cut + 1) };
}

/** A model's entry with the prices in force (PriceCalculation.model_price). */
function toModel(provider: Provider, model: Provider['models'][number], prices: PriceCalculation['model_price']): CatalogModel {
  const base = (key: string): number | null => {
    const value = prices[key];
    if (typeof value === 'number') return value;
    if (value && typeof value === 'object' && typeof value.base === 'number') return value.base;
    return null;
  };
  return {
    provider: provider.id,
    id: model.id,
    name: model.name ?? model.id,
    contextWindow: model.context_window ?? null,
    prices: {
      input: base('input_mtok'),
      output: base('output_mtok'),
      cacheRead: base('cache_read_mtok'),
      cacheWrite: base('cache_write_mtok'),
    },
  };
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

let loading: Promise<ModelCatalog> | null = null;

/**
 * The catalog, loaded on first use: the package holds every provider's data in one module (about
 * 0.8 MB of JavaScript, a tenth of a second to load), which a server that never prices anything
 * should not pay for at startup.
 */
export function loadModelCatalog(): Promise<ModelCatalog> {
  loading ??= import('@pydantic/genai-prices').then((prices) => new ModelCatalog(prices));
  return loading;
}
