/** What a call holds before its upstream: the worst-case retail price, per route. */
import type { Env } from '#shared/env.ts';
import type { Usd } from '#shared/money/index.ts';
import {
  currentPriceCatalog,
  type PriceCatalog,
  type RatedUsage,
  RatingError,
  rateUsage,
  ratingSettingsFor,
} from '#shared/rating/index.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { cuttable, firstGrant, quotaSettings } from '#shared/authorize/quota-steps.ts';
import { modelReasons } from '#shared/rating/model-limits.ts';
import { type CacheLifetime, longestCacheLifetime, refuseUnacceptedFields } from '../providers/accepted-fields.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { worstCaseInputTokens, worstCaseOutputTokens } from './worst-case-tokens.ts';

/**
 * The bounds the authorize statement needs to hold the worst case on every route: the platform price,
 * the developer_key price at cost (a feature without its own price charges the catalog cost), and the
 * worst-case token count for a feature's own per-million price (applied in SQL, where the price is).
 */
export interface HoldBounds {
  platform: Usd | null;
  developerKeyAtCost: Usd | null;
  worstCaseTokens: number;
  worstCaseInputTokens: number;
  /** The output the hold covers: the whole bound, or a cuttable call's first grant. */
  worstCaseOutputTokens: number;
  /** The request's whole output bound (its max tokens or the model's cap). */
  wholeOutputTokens: number;
  /**
   * The longest lifetime the request's cache breakpoints ask (null: none): its whole input is held at
   * that lifetime's write price (`heldInput`).
   */
  cacheLifetime: CacheLifetime | null;
  /** The output can be counted as it arrives: held for a first grant, grown by quota steps (docs/quota.md). */
  cuttable: boolean;
}

/** The part of the held input a hold prices at a cache-write price: five-minute or one-hour writes. */
export interface HeldInput {
  inputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens?: number;
}

export function holdBounds(
  env: Env,
  reference: ModelReference,
  request: ChatRequest,
  catalog: PriceCatalog = currentPriceCatalog,
): HoldBounds {
  // Only a request whose every field the gateway can bound is held (and then sent); the rest is refused here.
  refuseUnacceptedFields(reference.entry.protocol, reference.provider, request);
  const input = worstCaseInputTokens(request, reference);
  const whole = worstCaseOutputTokens(request, reference.provider, catalog);
  const thinking = request.thinking?.type === 'enabled' || request.thinking?.type === 'adaptive';
  // A prompt with cache breakpoints may be written to the cache whole, at the cache-write price (above
  // the input price); with a one-hour breakpoint, at the one-hour write price (above the five-minute
  // one), whatever mix of lifetimes Anthropic then reports.
  const cacheLifetime = longestCacheLifetime(request);
  const isCuttable = cuttable({
    // Every chat protocol's adapter streams: a call not streamed is read as a stream and answered whole (routes/metered-call.ts).
    streamed: true,
    protocol: reference.entry.protocol,
    thinking,
    modelReasons: modelReasons(reference.provider, reference.model, catalog),
  });
  const output = isCuttable ? firstGrant(whole, quotaSettings(env)) : whole;
  return {
    ...grantHold(env, reference, heldInput({ worstCaseInputTokens: input, cacheLifetime }), output, catalog),
    worstCaseTokens: input + output,
    worstCaseInputTokens: input,
    worstCaseOutputTokens: output,
    wholeOutputTokens: whole,
    cacheLifetime,
    cuttable: isCuttable,
  };
}

/** The held input as rating takes it: all of it at the write price of its breakpoints' longest lifetime. */
export function heldInput(bounds: Pick<HoldBounds, 'worstCaseInputTokens' | 'cacheLifetime'>): HeldInput {
  const input = bounds.worstCaseInputTokens;
  return {
    inputTokens: input,
    cacheWriteTokens: bounds.cacheLifetime === '5m' ? input : 0,
    cacheWrite1hTokens: bounds.cacheLifetime === '1h' ? input : 0,
  };
}

/**
 * The hold of `outputTokens` of output on top of the bounded input, on both routes priced by the
 * catalog: a call's first hold, and each quota step's. One rating serves both: developer_key at cost
 * charges the catalog cost of the tokens, which is the platform rating's upstream cost (the same
 * prices, tokens and rounding).
 */
export function grantHold(
  env: Env,
  reference: ModelReference,
  input: HeldInput,
  outputTokens: number,
  catalog: PriceCatalog = currentPriceCatalog,
): Pick<HoldBounds, 'platform' | 'developerKeyAtCost'> {
  const platform = worstCasePlatformRating(env, reference, { ...input, outputTokens }, catalog);
  return { platform: platform?.retailUsd ?? null, developerKeyAtCost: platform?.upstreamCostUsd ?? null };
}

function worstCasePlatformRating(
  env: Env,
  reference: ModelReference,
  tokens: HeldInput & { outputTokens: number },
  catalog: PriceCatalog = currentPriceCatalog,
): RatedUsage | null {
  try {
    return rateUsage(
      { routeMode: 'platform', provider: reference.provider, model: reference.model, ...tokens, estimated: true },
      {},
      ratingSettingsFor(env, null),
      catalog,
    );
  } catch (error) {
    if (error instanceof RatingError && error.reason === 'unknown_model') return null;
    throw error;
  }
}
