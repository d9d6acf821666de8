/**
 * How many output tokens one call to a model can produce: the hold's worst case when a request names
 * no `max_tokens`, and the `max_tokens` sent to a provider that requires one (Anthropic).
 *
 * Sources, in order: the model's published maximum output (the table below: genai-prices carries
 * context windows but no output limits); else, for a provider that is always sent the cap, a value
 * all its models accept; else the catalog's context window (input and output share it, so the
 * output can never exceed it); else `fallbackOutputTokenCap` (the call is still booked in full if
 * the provider goes past it: the shortfall becomes a receivable, docs/money.md).
 *
 * Keys are catalog ids (`provider:model`, the id the catalog resolves an alias to). Values are the
 * providers' documented maximum output tokens for the standard API (no beta headers).
 */
import { currentPriceCatalog, type PriceCatalog } from './catalog.ts';

const maxOutputTokens: Readonly<Record<string, number>> = {
  'mock:echo': 4_096,
  // OpenAI (platform.openai.com/docs/models).
  'openai:gpt-4o-mini': 16_384,
  'openai:gpt-4o': 16_384,
  'openai:gpt-4.1': 32_768,
  'openai:gpt-4.1-mini': 32_768,
  'openai:gpt-4.1-nano': 32_768,
  'openai:gpt-5': 128_000,
  'openai:gpt-5-mini': 128_000,
  'openai:gpt-5-nano': 128_000,
  'openai:o1': 100_000,
  'openai:o3': 100_000,
  'openai:o3-mini': 100_000,
  'openai:o4-mini': 100_000,
  'openai:gpt-4-turbo': 4_096,
  'openai:gpt-4': 8_192,
  'openai:gpt-3.5-turbo': 4_096,
  // Anthropic (docs.anthropic.com, models overview).
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
  'google:gemini-2.5-pro': 65_536,
  'google:gemini-2.5-flash': 65_536,
  'google:gemini-2.5-flash-lite': 65_536,
  'google:gemini-2.0-flash': 8_192,
  'google:gemini-2.0-flash-lite': 8_192,
  'google:gemini-1.5-pro': 8_192,
  'google:gemini-1.5-flash': 8_192,
};

export const fallbackOutputTokenCap = 4_096;

/**
 * Providers that are always sent the cap as `max_tokens` (so it bounds the call whatever its value)
 * and refuse a value above the model's own maximum: an unlisted model gets at most this many, a
 * value every current model of the provider accepts.
 */
const sentCapCeilings: Readonly<Record<string, number>> = { anthropic: 64_000 };

/** Context window and output cap of a model, as /v1/models shows them; nulls when unknown. */
export function modelLimits(provider: string, model: string, catalog: PriceCatalog = currentPriceCatalog) {
  const entry = catalog.find(provider, model);
  const key = entry ? `${entry.provider}:${entry.model}` : `${provider}:${model}`;
  return { contextWindow: entry?.contextWindow ?? null, maxOutputTokens: maxOutputTokens[key] ?? null };
}

/** The most output tokens one call to `provider:model` is held for (see the module comment). */
export function outputTokenCap(provider: string, model: string, catalog: PriceCatalog = currentPriceCatalog): number {
  const { contextWindow, maxOutputTokens: maxOutput } = modelLimits(provider, model, catalog);
  if (maxOutput !== null) return maxOutput;
  const ceiling = sentCapCeilings[provider];
  if (ceiling !== undefined) return Math.min(contextWindow ?? ceiling, ceiling);
  return contextWindow ?? fallbackOutputTokenCap;
}
