/**
 * The provider models of the price catalog, read from `@pydantic/genai-prices` (its bundled data,
 * never its remote updates and never its float totals) and converted exactly into money.
 *
 * What is taken, per model: every price period (a date-conditional or time-of-day constraint, kept
 * as data and chosen per call), and in each period the per-million prices of the token classes
 * Faucet meters (`input_mtok`, `cache_read_mtok`, `cache_write_mtok`, `cache_write_1h_mtok`,
 * `output_mtok`, `input_audio_mtok`, `output_audio_mtok`, `output_reasoning_mtok`), flat or tiered.
 * An Anthropic period without a one-hour cache-write price gets Anthropic's published one (see
 * `anthropicOneHourWrite`).
 *
 * What is ignored: prices of things the gateway never lets a call incur, since its request schema
 * refuses them (web and file search calls, audio parts so cached audio).
 *
 * What leaves a model out (listed in `excluded` with the reason, pinned by a test): a price with no
 * exact 8-decimal value; a priced class Faucet does not meter (image, video or document tokens,
 * per-request or per-hour prices), since rating it as plain tokens would be wrong; no input or no
 * output price (free or non-chat models; an embedding model priced for its input is admitted with an
 * output price of 0); tier prices that go down as the input grows (the hold
 * could no longer bound the call); a constraint of an unknown kind.
 */
import { findProvider, type ModelInfo, type ModelPrice as GenaiModelPrice } from '@pydantic/genai-prices';
import { addUsd, type Usd } from '../money/index.ts';
import { usdFromCatalogNumber } from './exact-decimal.ts';
import type {
  CatalogModel,
  ExcludedModel,
  PriceClass,
  PriceConstraint,
  PricePeriod,
  TieredModelPrice,
  TieredPrice,
} from './price-types.ts';

/** The package version the data comes from: pinned exactly in package.json (a test checks they agree). */
export const genaiPricesVersion = '0.1.8';

/**
 * Faucet provider name → the genai-prices providers whose models it serves, in lookup order (the
 * first one naming a model wins). Names without an entry in the provider catalog are priced but not
 * routable.
 */
export const catalogSources: Readonly<Record<string, readonly string[]>> = {
  openai: ['openai'],
  anthropic: ['anthropic'],
  google: ['google'],
  mistral: ['mistral'],
  groq: ['groq'],
  deepseek: ['deepseek'],
  xai: ['x-ai'],
  together: ['together'],
  fireworks: ['fireworks'],
  openrouter: ['openrouter'],
  // Azure OpenAI serves OpenAI's models under the same names (plus its own list).
  azure: ['azure', 'openai'],
};

const meteredKeys: Readonly<Record<string, PriceClass>> = {
  input_mtok: 'inputPerMillion',
  cache_read_mtok: 'cachedInputPerMillion',
  cache_write_mtok: 'cacheWritePerMillion',
  cache_write_1h_mtok: 'cacheWrite1hPerMillion',
  output_mtok: 'outputPerMillion',
  input_audio_mtok: 'audioInputPerMillion',
  output_audio_mtok: 'audioOutputPerMillion',
  output_reasoning_mtok: 'reasoningPerMillion',
};

/** Prices of things a gateway call cannot incur (see the module comment). */
const ignoredKeys = new Set(['web_searches_kcount', 'storage_searches_kcount', 'cache_audio_read_mtok']);

class Excluded extends Error {}

function money(value: unknown, where: string): Usd {
  const amount = typeof value === 'number' ? usdFromCatalogNumber(value) : null;
  if (amount === null) throw new Excluded(`${where} = ${String(value)} has no exact 8-decimal value`);
  return amount;
}

function tiered(value: unknown, key: string): TieredPrice {
  if (typeof value === 'number') return { base: money(value, key), tiers: [] };
  const data = value as { base?: unknown; tiers?: unknown };
  if (typeof data !== 'object' || data === null || !Array.isArray(data.tiers)) throw new Excluded(`${key} is not a price`);
  const tiers = (data.tiers as Array<{ start?: unknown; price?: unknown }>)
    .map((tier) => {
      if (typeof tier.start !== 'number' || !Number.isSafeInteger(tier.start) || tier.start < 0) {
        throw new Excluded(`${key} has a tier without a whole-token start`);
      }
      return { above: tier.start, price: money(tier.price, `${key} above ${tier.start} input tokens`), raw: tier.price as number };
    })
    .sort((left, right) => left.above - right.above);
  let previous = typeof data.base === 'number' ? data.base : Number.NaN;
  const base = money(data.base, `${key} base`);
  for (const tier of tiers) {
    if (!(tier.raw >= previous)) throw new Excluded(`${key} tier prices go down as the input grows`);
    previous = tier.raw;
  }
  return { base, tiers: tiers.map(({ above, price }) => ({ above, price })) };
}

/**
 * An embedding model is priced for its input alone (its answer is vectors, not tokens): admitted
 * with an output price of 0. Every provider Faucet routes names them so (text-embedding-3-small,
 * mistral-embed, gemini-embedding-001).
 */
const isEmbeddingModel = (id: string): boolean => /embed/i.test(id);

/**
 * Anthropic's rule for a one-hour prompt-cache write where the data has no price of its own: 2× the
 * base input price, in every tier ("1-hour cache write tokens are 2 times the base input tokens
 * price", https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing). Exact:
 * the input price added to itself.
 */
function anthropicOneHourWrite(input: TieredPrice): TieredPrice {
  return { base: addUsd(input.base, input.base), tiers: input.tiers.map(({ above, price }) => ({ above, price: addUsd(price, price) })) };
}

function periodPrices(prices: GenaiModelPrice, embedding: boolean, provider: string): TieredModelPrice {
  const converted: Partial<Record<PriceClass, TieredPrice>> = {};
  for (const [key, value] of Object.entries(prices)) {
    if (value === undefined || ignoredKeys.has(key)) continue;
    const priceClass = meteredKeys[key];
    if (priceClass === undefined) throw new Excluded(`prices ${key}, a class Faucet does not meter`);
    converted[priceClass] = tiered(value, key);
  }
  const { inputPerMillion } = converted;
  const outputPerMillion = converted.outputPerMillion ?? (embedding ? tiered(0, 'output_mtok') : undefined);
  if (!inputPerMillion || !outputPerMillion) throw new Excluded('has no input or no output token price');
  if (provider === 'anthropic' && converted.cacheWrite1hPerMillion === undefined) {
    converted.cacheWrite1hPerMillion = anthropicOneHourWrite(inputPerMillion);
  }
  return { ...converted, inputPerMillion, outputPerMillion };
}

/** `HH:MM:SS[.fff](Z|±HH:MM)` → seconds after midnight UTC. */
function utcSecondOfDay(text: string): number {
  const match = /^(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(Z|([+-])(\d{2}):(\d{2}))$/.exec(text);
  if (!match) throw new Excluded(`time-of-day constraint ${text} is not understood`);
  const [, hours, minutes, seconds, zone, sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const local = Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds);
  const offset = zone === 'Z' ? 0 : (sign === '+' ? 1 : -1) * (Number(offsetHours) * 3600 + Number(offsetMinutes) * 60);
  return (((local - offset) % 86_400) + 86_400) % 86_400;
}

function constraintOf(constraint: unknown): PriceConstraint | null {
  if (constraint === undefined) return null;
  const data = constraint as { type?: unknown; start_date?: unknown; start_time?: unknown; end_time?: unknown };
  if (typeof data.start_date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(data.start_date)) {
    return { type: 'from_date', startDate: data.start_date, fromMs: Date.parse(`${data.start_date}T00:00:00Z`) };
  }
  if (typeof data.start_time === 'string' && typeof data.end_time === 'string') {
    return { type: 'time_of_day', startSecond: utcSecondOfDay(data.start_time), endSecond: utcSecondOfDay(data.end_time) };
  }
  throw new Excluded(`has a price constraint of an unknown kind: ${JSON.stringify(constraint)}`);
}

function periodsOf(provider: string, model: ModelInfo): PricePeriod[] {
  const periods = Array.isArray(model.prices) ? model.prices : [{ prices: model.prices }];
  if (periods.length === 0) throw new Excluded('has no price');
  return periods.map((period) => ({
    constraint: constraintOf(period.constraint),
    prices: periodPrices(period.prices, isEmbeddingModel(model.id), provider),
  }));
}

/** Model ids the data matches exactly besides the model's own id (`equals` rules, alone or under `or`). */
function exactAliases(match: unknown): string[] {
  const rule = match as { equals?: unknown; or?: unknown };
  if (typeof rule?.equals === 'string') return [rule.equals.toLowerCase()];
  if (Array.isArray(rule?.or)) return rule.or.flatMap(exactAliases);
  return [];
}

/** A catalog entry before conversion: its names, and how to convert it (done on first use). */
export interface CatalogSource {
  provider: string;
  /** `provider:model`. */
  key: string;
  /** Other `provider:name` keys that resolve to it (exact aliases of the data). */
  aliases: string[];
  load(): CatalogModel | ExcludedModel;
}

function convert(provider: string, model: ModelInfo): CatalogModel | ExcludedModel {
  try {
    return {
      provider,
      model: model.id,
      name: model.name ?? model.id,
      contextWindow: typeof model.context_window === 'number' ? model.context_window : null,
      periods: periodsOf(provider, model),
    };
  } catch (error) {
    if (!(error instanceof Excluded)) throw error;
    return { key: `${provider}:${model.id}`, reason: error.message };
  }
}

/** Every model of every source provider, in the data's order; cheap: prices are converted by `load`. */
export function genaiCatalogSources(): CatalogSource[] {
  const sources: CatalogSource[] = [];
  for (const [provider, providerIds] of Object.entries(catalogSources)) {
    const seen = new Set<string>();
    for (const providerId of providerIds) {
      const data = findProvider({ providerId });
      if (data === undefined || data.id !== providerId) throw new Error(`genai-prices has no provider "${providerId}"`);
      for (const model of data.models) {
        if (seen.has(model.id)) continue;
        seen.add(model.id);
        sources.push({
          provider,
          key: `${provider}:${model.id}`,
          aliases: exactAliases(model.match)
            .filter((alias) => alias !== model.id)
            .map((alias) => `${provider}:${alias}`),
          load: () => convert(provider, model),
        });
      }
    }
  }
  return sources;
}
