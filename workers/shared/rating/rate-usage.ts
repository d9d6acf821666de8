/**
 * Rating: turns one model call's token counts into money, per DESIGN §5. Pure: same input, same
 * output, no database; the price period is the one in force at `pricedAt` (the call's time).
 *
 * Token classes (workers/shared/providers/token-usage.ts): the input splits into cache reads, cache
 * writes (five-minute and one-hour), audio and the rest; the output into audio, reasoning and the rest. Each part is priced at
 * its own per-million price where the catalog has one, else at the price of the whole it belongs to
 * (price-types.ts). Tiered prices take the tier of the call's whole input token count.
 *
 * Rounding (all to 1e-8 USD):
 * - upstream cost: the classes' costs are summed exactly, then rounded up once;
 * - platform retail: upstream × (1 + markup), rounded up (the user never pays less than cost);
 * - platform route: developer revenue = margin × channel share, rounded down; the platform keeps
 *   the rest, so revenue + platform share + upstream always equals retail exactly;
 * - developer_key, byok, local: platform fee = retail × fee share, rounded up; the developer
 *   gets retail − fee.
 *
 * A developer's own custom OpenAI-compatible server (provider `custom`) has no catalog price: on the
 * developer_key route it is rated at the feature's developer price alone, with no catalog prices and
 * an upstream cost of 0 (what the server costs its owner is unknown to Faucet, and Faucet pays
 * nothing for it); without a feature price it cannot be rated there (docs/provider-keys.md).
 */
import { addUsd, applyBasisPoints, priceTokensThenRound, subtractUsd, zeroUsd, type Usd } from '../money/index.ts';
import { currentPriceCatalog, findModelPrice, modelPriceAt, type PriceCatalog } from './catalog.ts';
import type { ModelPrice, ResolvedPrice } from './price-types.ts';
import { isRouteMode, type RouteMode } from '../wire/route-modes.ts';
import { RatingError } from './rating-error.ts';

export { routeModes, type RouteMode } from '../wire/route-modes.ts';

export interface RatingSettings {
  /** platform route: retail = upstream × (1 + markup). */
  platformMarkupBps: number;
  /** platform route: the developer's (channel) share of the margin. */
  channelShareBps: number;
  /** developer_key, byok, local: the platform's fee as a share of the retail price. */
  platformFeeBps: number;
}

export const defaultRatingSettings: RatingSettings = { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_000 };

export interface FeaturePricing {
  /** developer_key: the developer's price per million tokens; absent = the catalog price (at cost). */
  developerPrice?: Pick<ModelPrice, 'inputPerMillion' | 'outputPerMillion'> | null;
  /** byok and local: a per-request fee the feature shows openly; absent = 0. */
  openFeeUsd?: Usd | null;
}

export interface UsageToRate {
  routeMode: string;
  provider: string;
  model: string;
  /** All input tokens, every class included. */
  inputTokens: number;
  /** All output tokens, reasoning and audio included. */
  outputTokens: number;
  /** The part of `inputTokens` read from the prompt cache, where the provider reports it. */
  cachedInputTokens?: number;
  /** The part of `inputTokens` written to the prompt cache (not read from it) for the default five minutes. */
  cacheWriteTokens?: number;
  /** The part of `inputTokens` written to the prompt cache for one hour (apart from `cacheWriteTokens`). */
  cacheWrite1hTokens?: number;
  /** The part of `inputTokens` that is audio not read from the cache. */
  audioInputTokens?: number;
  /** The part of `outputTokens` that is audio. */
  audioOutputTokens?: number;
  /** The part of `outputTokens` (not audio) spent on reasoning. */
  reasoningTokens?: number;
  /** True when the provider reported no counts and Faucet estimated them. */
  estimated: boolean;
  /** The call's time, which picks a date- or time-conditional price; absent = now. */
  pricedAt?: Date;
}

export interface RatedUsage {
  routeMode: RouteMode;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  audioInputTokens: number;
  audioOutputTokens: number;
  reasoningTokens: number;
  estimated: boolean;
  /** Catalog version the upstream cost was computed with; null when no catalog price was needed. */
  catalogVersion: string | null;
  /** The catalog's per-million prices this call was rated with (its period and tier); null with no catalog price. */
  prices: ResolvedPrice | null;
  /** What the tokens cost at the provider (informational on developer_key: the developer pays it). */
  upstreamCostUsd: Usd;
  /** What the platform owes the provider for this call: the upstream cost on the platform route, else 0. */
  upstreamPayableUsd: Usd;
  /** What the end user is charged. */
  retailUsd: Usd;
  developerRevenueUsd: Usd;
  platformShareUsd: Usd;
}

function tokenCount(value: number | undefined, field: string): bigint {
  if (value === undefined) return 0n;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new RatingError('invalid_tokens', `${field} must be a whole number`);
  }
  if (value < 0) throw new RatingError('negative_tokens', `${field} must not be negative`);
  return BigInt(value);
}

function checkBasisPoints(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RatingError('invalid_settings', `${field} must be a non-negative integer`);
}

function checkSettings(settings: RatingSettings): void {
  checkBasisPoints(settings.platformMarkupBps, 'platformMarkupBps');
  checkBasisPoints(settings.channelShareBps, 'channelShareBps');
  checkBasisPoints(settings.platformFeeBps, 'platformFeeBps');
  if (settings.channelShareBps > 10_000) throw new RatingError('invalid_settings', 'channelShareBps must be at most 10000');
  if (settings.platformFeeBps > 10_000) throw new RatingError('invalid_settings', 'platformFeeBps must be at most 10000');
}

/** The disjoint classes of one call, each priced at one rate. */
interface Tokens {
  /** Input in all: picks the tier. */
  allInput: bigint;
  plainInput: bigint;
  cachedInput: bigint;
  cacheWrite: bigint;
  cacheWrite1h: bigint;
  audioInput: bigint;
  plainOutput: bigint;
  reasoning: bigint;
  audioOutput: bigint;
}

/** Every class's price, a missing one at the price of the whole it belongs to. */
export function resolvePrice(price: ModelPrice): ResolvedPrice {
  return {
    inputPerMillion: price.inputPerMillion,
    outputPerMillion: price.outputPerMillion,
    cachedInputPerMillion: price.cachedInputPerMillion ?? price.inputPerMillion,
    cacheWritePerMillion: price.cacheWritePerMillion ?? price.inputPerMillion,
    // A one-hour write is a cache write: without its own price, at the (five-minute) write price.
    cacheWrite1hPerMillion: price.cacheWrite1hPerMillion ?? price.cacheWritePerMillion ?? price.inputPerMillion,
    audioInputPerMillion: price.audioInputPerMillion ?? price.inputPerMillion,
    audioOutputPerMillion: price.audioOutputPerMillion ?? price.outputPerMillion,
    reasoningPerMillion: price.reasoningPerMillion ?? price.outputPerMillion,
  };
}

function costOf(tokens: Tokens, price: ModelPrice): Usd {
  const rates = resolvePrice(price);
  return priceTokensThenRound(
    [
      [rates.inputPerMillion, tokens.plainInput],
      [rates.cachedInputPerMillion, tokens.cachedInput],
      [rates.cacheWritePerMillion, tokens.cacheWrite],
      [rates.cacheWrite1hPerMillion, tokens.cacheWrite1h],
      [rates.audioInputPerMillion, tokens.audioInput],
      [rates.outputPerMillion, tokens.plainOutput],
      [rates.reasoningPerMillion, tokens.reasoning],
      [rates.audioOutputPerMillion, tokens.audioOutput],
    ],
    'up',
  );
}

function requirePrice(catalog: PriceCatalog, usage: UsageToRate, tokens: Tokens): ResolvedPrice {
  const model = findModelPrice(catalog, usage.provider, usage.model);
  if (!model) throw new RatingError('unknown_model', `no price for ${usage.provider}:${usage.model} in catalog ${catalog.version}`);
  return resolvePrice(modelPriceAt(model, usage.pricedAt ?? new Date(), tokens.allInput));
}

function tokensOf(usage: UsageToRate): Tokens {
  const input = tokenCount(usage.inputTokens, 'input_tokens');
  const output = tokenCount(usage.outputTokens, 'output_tokens');
  const cachedInput = tokenCount(usage.cachedInputTokens, 'cached_input_tokens');
  const cacheWrite = tokenCount(usage.cacheWriteTokens, 'cache_write_tokens');
  const cacheWrite1h = tokenCount(usage.cacheWrite1hTokens, 'cache_write_1h_tokens');
  const audioInput = tokenCount(usage.audioInputTokens, 'audio_input_tokens');
  const audioOutput = tokenCount(usage.audioOutputTokens, 'audio_output_tokens');
  const reasoning = tokenCount(usage.reasoningTokens, 'reasoning_tokens');
  if (cachedInput > input) throw new RatingError('invalid_tokens', 'cached_input_tokens must not exceed input_tokens');
  if (cachedInput + cacheWrite + cacheWrite1h + audioInput > input) {
    throw new RatingError('invalid_tokens', 'cached, cache write and audio input tokens must not exceed input_tokens together');
  }
  if (audioOutput + reasoning > output) {
    throw new RatingError('invalid_tokens', 'audio output and reasoning tokens must not exceed output_tokens together');
  }
  return {
    allInput: input,
    plainInput: input - cachedInput - cacheWrite - cacheWrite1h - audioInput,
    cachedInput,
    cacheWrite,
    cacheWrite1h,
    audioInput,
    plainOutput: output - audioOutput - reasoning,
    reasoning,
    audioOutput,
  };
}

/** Providers whose models the catalog never prices (a developer's own server): rated at the feature's price on developer_key. */
const pricedByFeatureOnly: ReadonlySet<string> = new Set(['custom']);

/** Split a retail amount into the platform's fee (rounded up) and the developer's revenue. */
function splitFee(retail: Usd, feeBps: number): { developerRevenueUsd: Usd; platformShareUsd: Usd } {
  const platformShareUsd = applyBasisPoints(retail, feeBps, 'up');
  return { platformShareUsd, developerRevenueUsd: subtractUsd(retail, platformShareUsd) };
}

export function rateUsage(
  usage: UsageToRate,
  feature: FeaturePricing = {},
  settings: RatingSettings = defaultRatingSettings,
  catalog: PriceCatalog = currentPriceCatalog,
): RatedUsage {
  if (!isRouteMode(usage.routeMode)) throw new RatingError('unknown_route', `unknown route mode: ${String(usage.routeMode)}`);
  checkSettings(settings);
  const tokens = tokensOf(usage);

  const base = {
    routeMode: usage.routeMode,
    provider: usage.provider,
    model: usage.model,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedInputTokens: usage.cachedInputTokens ?? 0,
    cacheWriteTokens: usage.cacheWriteTokens ?? 0,
    cacheWrite1hTokens: usage.cacheWrite1hTokens ?? 0,
    audioInputTokens: usage.audioInputTokens ?? 0,
    audioOutputTokens: usage.audioOutputTokens ?? 0,
    reasoningTokens: usage.reasoningTokens ?? 0,
    estimated: usage.estimated,
  };

  switch (usage.routeMode) {
    case 'platform': {
      const prices = requirePrice(catalog, usage, tokens);
      const upstreamCostUsd = costOf(tokens, prices);
      const retailUsd = addUsd(upstreamCostUsd, applyBasisPoints(upstreamCostUsd, settings.platformMarkupBps, 'up'));
      const margin = subtractUsd(retailUsd, upstreamCostUsd);
      const developerRevenueUsd = applyBasisPoints(margin, settings.channelShareBps, 'down');
      return {
        ...base,
        catalogVersion: catalog.version,
        prices,
        upstreamCostUsd,
        upstreamPayableUsd: upstreamCostUsd,
        retailUsd,
        developerRevenueUsd,
        platformShareUsd: subtractUsd(margin, developerRevenueUsd),
      };
    }
    case 'developer_key': {
      const developerPrice = feature.developerPrice;
      if (developerPrice && pricedByFeatureOnly.has(usage.provider) && !findModelPrice(catalog, usage.provider, usage.model)) {
        const retailUsd = costOf(tokens, developerPrice);
        return {
          ...base,
          catalogVersion: null,
          prices: null,
          upstreamCostUsd: zeroUsd(),
          upstreamPayableUsd: zeroUsd(),
          retailUsd,
          ...splitFee(retailUsd, settings.platformFeeBps),
        };
      }
      const prices = requirePrice(catalog, usage, tokens);
      const upstreamCostUsd = costOf(tokens, prices);
      const retailUsd = feature.developerPrice ? costOf(tokens, feature.developerPrice) : upstreamCostUsd;
      return {
        ...base,
        catalogVersion: catalog.version,
        prices,
        upstreamCostUsd,
        upstreamPayableUsd: zeroUsd(),
        retailUsd,
        ...splitFee(retailUsd, settings.platformFeeBps),
      };
    }
    case 'byok':
    case 'local': {
      const retailUsd = feature.openFeeUsd ?? zeroUsd();
      return {
        ...base,
        catalogVersion: null,
        prices: null,
        upstreamCostUsd: zeroUsd(),
        upstreamPayableUsd: zeroUsd(),
        retailUsd,
        ...splitFee(retailUsd, settings.platformFeeBps),
      };
    }
  }
}
