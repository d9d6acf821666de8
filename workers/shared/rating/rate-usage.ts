/**
 * Rating: turns one model call's token counts into money, per DESIGN §5. Pure: same input, same
 * output, no clock, no database.
 *
 * Rounding (all to 1e-8 USD):
 * - upstream cost: input, cached and output costs are summed exactly, then rounded up once;
 * - platform retail: upstream × (1 + markup), rounded up (the user never pays less than cost);
 * - platform route: developer revenue = margin × channel share, rounded down; the platform keeps
 *   the rest, so revenue + platform share + upstream always equals retail exactly;
 * - developer_key, byok, local: platform fee = retail × fee share, rounded up; the developer
 *   gets retail − fee.
 */
import { addUsd, applyBasisPoints, priceTokensExact, subtractUsd, sumExactThenRound, zeroUsd, type Usd } from '../money/index.ts';
import { currentPriceCatalog, findModelPrice, type ModelPrice, type PriceCatalog } from './catalog.ts';
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
  /** All input tokens, including those served from the provider's prompt cache. */
  inputTokens: number;
  outputTokens: number;
  /** The part of `inputTokens` read from the prompt cache, where the provider reports it. */
  cachedInputTokens?: number;
  /** True when the provider reported no counts and Faucet estimated them. */
  estimated: boolean;
}

export interface RatedUsage {
  routeMode: RouteMode;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  estimated: boolean;
  /** Catalog version the upstream cost was computed with; null when no catalog price was needed. */
  catalogVersion: string | null;
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

interface Tokens {
  uncachedInput: bigint;
  cachedInput: bigint;
  output: bigint;
}

function costOf(tokens: Tokens, price: Pick<ModelPrice, 'inputPerMillion' | 'outputPerMillion'> & Partial<ModelPrice>): Usd {
  return sumExactThenRound(
    [
      priceTokensExact(price.inputPerMillion, tokens.uncachedInput),
      priceTokensExact(price.cachedInputPerMillion ?? price.inputPerMillion, tokens.cachedInput),
      priceTokensExact(price.outputPerMillion, tokens.output),
    ],
    'up',
  );
}

function requirePrice(catalog: PriceCatalog, provider: string, model: string): ModelPrice {
  const price = findModelPrice(catalog, provider, model);
  if (!price) throw new RatingError('unknown_model', `no price for ${provider}:${model} in catalog ${catalog.version}`);
  return price;
}

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
  const input = tokenCount(usage.inputTokens, 'input_tokens');
  const output = tokenCount(usage.outputTokens, 'output_tokens');
  const cachedInput = tokenCount(usage.cachedInputTokens, 'cached_input_tokens');
  if (cachedInput > input) throw new RatingError('invalid_tokens', 'cached_input_tokens must not exceed input_tokens');
  const tokens: Tokens = { uncachedInput: input - cachedInput, cachedInput, output };

  const base = {
    routeMode: usage.routeMode,
    provider: usage.provider,
    model: usage.model,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedInputTokens: usage.cachedInputTokens ?? 0,
    estimated: usage.estimated,
  };

  switch (usage.routeMode) {
    case 'platform': {
      const upstreamCostUsd = costOf(tokens, requirePrice(catalog, usage.provider, usage.model));
      const retailUsd = addUsd(upstreamCostUsd, applyBasisPoints(upstreamCostUsd, settings.platformMarkupBps, 'up'));
      const margin = subtractUsd(retailUsd, upstreamCostUsd);
      const developerRevenueUsd = applyBasisPoints(margin, settings.channelShareBps, 'down');
      return {
        ...base,
        catalogVersion: catalog.version,
        upstreamCostUsd,
        upstreamPayableUsd: upstreamCostUsd,
        retailUsd,
        developerRevenueUsd,
        platformShareUsd: subtractUsd(margin, developerRevenueUsd),
      };
    }
    case 'developer_key': {
      const catalogPrice = requirePrice(catalog, usage.provider, usage.model);
      const upstreamCostUsd = costOf(tokens, catalogPrice);
      const retailUsd = feature.developerPrice ? costOf(tokens, feature.developerPrice) : upstreamCostUsd;
      return {
        ...base,
        catalogVersion: catalog.version,
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
        upstreamCostUsd: zeroUsd(),
        upstreamPayableUsd: zeroUsd(),
        retailUsd,
        ...splitFee(retailUsd, settings.platformFeeBps),
      };
    }
  }
}
