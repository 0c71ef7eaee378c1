import type { EstimatedCost as EstimatedCostShape } from '../domain/assembly/index.js';
import {
  CATALOG_CURRENCY,
  CATALOG_PACKAGE,
  DEFAULT_OUTPUT_RESERVE,
  loadModelCatalog,
  SEARCHED_PROVIDERS,
  type CatalogModel as CatalogModelShape,
} from '../domain/model-catalog.js';
import { badInput } from '../domain/errors.js';
import { AssembledContext } from './assembly.js';
import { builder } from './builder.js';

const MODEL_CATALOG_MAX = 100;

export const EstimatedCost = builder.objectRef<EstimatedCostShape>('EstimatedCost').implement({
  description: `What the payload's input costs with the model named in assembleContext, from the model catalog (${CATALOG_PACKAGE}, docs/models.md) at the time of the call. Input only: the answer's tokens are not known yet, and Anthropic's surcharge for writing the cache is not added.`,
  fields: (t) => ({
    model: t.exposeString('model', { description: 'The catalog model priced, as provider/id (`anthropic/claude-sonnet-4-5`).' }),
    inputCost: t.exposeFloat('inputCost', {
      description: "The tokens after the reused prefix (tokenCount − reusedPrefixTokens) at the model's input rate.",
    }),
    cachedInputCost: t.exposeFloat('cachedInputCost', {
      description:
        "The reused prefix (reusedPrefixTokens) at the model's cache-read rate (its input rate when the catalog has no cache-read price).",
    }),
    total: t.exposeFloat('total', { description: 'inputCost + cachedInputCost.' }),
    currency: t.exposeString('currency', { description: `ISO 4217 code; always ${CATALOG_CURRENCY} (the catalog's currency).` }),
  }),
});

builder.objectField(AssembledContext, 'estimatedCost', (t) =>
  t.field({
    type: EstimatedCost,
    nullable: true,
    description:
      "What sending this payload costs with the input's `model`, the reused prefix at the cached rate; null when no model was given.",
    resolve: (c) => c.estimatedCost ?? null,
  }),
);

const ModelPrices = builder.objectRef<CatalogModelShape['prices']>('ModelPrices').implement({
  description: `Prices in ${CATALOG_CURRENCY} per million tokens, at the base tier (before any long-prompt tier) and in force today; null where the catalog has none.`,
  fields: (t) => ({
    input: t.exposeFloat('input', { nullable: true, description: 'Uncached input tokens.' }),
    output: t.exposeFloat('output', { nullable: true, description: 'Output tokens (reasoning included).' }),
    cacheRead: t.exposeFloat('cacheRead', { nullable: true, description: 'Input tokens read from the provider cache.' }),
    cacheWrite: t.exposeFloat('cacheWrite', {
      nullable: true,
      description: 'Input tokens written to the provider cache (Anthropic, 5-minute lifetime); null where writing is not billed apart.',
    }),
  }),
});

const CatalogModel = builder.objectRef<CatalogModelShape>('CatalogModel').implement({
  description: `A model of the model catalog (${CATALOG_PACKAGE}, docs/models.md).`,
  fields: (t) => ({
    name: t.string({
      description: 'The name to pass as `model`: provider/id, which always finds this entry.',
      resolve: (m) => `${m.provider}/${m.id}`,
    }),
    provider: t.exposeString('provider', { description: "The catalog's provider id (anthropic, openai, google, …)." }),
    id: t.exposeString('id', { description: "The catalog's id of the model (a family: dated snapshots of it find it too)." }),
    displayName: t.string({ description: 'Its display name.', resolve: (m) => m.name }),
    contextWindow: t.exposeInt('contextWindow', {
      nullable: true,
      description: 'Input and output tokens one call may hold together; null when the catalog does not say (then pass maxTokens).',
    }),
    defaultMaxTokens: t.int({
      nullable: true,
      description: `The maxTokens assembleContext and contextGauge use for it without maxTokens or outputReserve: contextWindow less ${DEFAULT_OUTPUT_RESERVE.toLocaleString('en-US')} tokens, or less a quarter of it when that is smaller.`,
      resolve: async (m) => (m.contextWindow === null ? null : (await loadModelCatalog()).defaultMaxTokens(m)),
    }),
    prices: t.field({ type: ModelPrices, description: 'Its prices.', resolve: (m) => m.prices }),
  }),
});

builder.queryField('modelCatalog', (t) =>
  t.field({
    type: [CatalogModel],
    description: `Models of the catalog whose provider/id or display name contains every word of \`search\` (case-insensitive), in the catalog's order: the names \`model\` takes. Searches ${SEARCHED_PROVIDERS.join(', ')} (the providers of the formats), or \`provider\` alone.`,
    args: {
      search: t.arg.string({ required: true, description: 'Words to look for, such as "sonnet" or "gpt 5".' }),
      provider: t.arg.string({ required: false, description: 'One catalog provider to search (anthropic, openai, google, deepseek, …).' }),
      first: t.arg.int({ required: false, defaultValue: 20, description: `How many at most (1 to ${MODEL_CATALOG_MAX}).` }),
    },
    resolve: async (_, args) => {
      if (args.search.length > 200) throw badInput('search must be at most 200 characters.', { field: 'search' });
      const first = args.first ?? 20;
      if (!Number.isInteger(first) || first < 1 || first > MODEL_CATALOG_MAX) {
        throw badInput(`first must be from 1 to ${MODEL_CATALOG_MAX} (got ${first}).`, { field: 'first' });
      }
      return (await loadModelCatalog()).search(args.search, args.provider?.toLowerCase() ?? null, first);
    },
  }),
);
