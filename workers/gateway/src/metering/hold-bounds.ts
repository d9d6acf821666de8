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
import { hasCacheBreakpoints, refuseUnacceptedFields } from '../providers/accepted-fields.ts';
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
  worstCaseOutputTokens: number;
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
  const output = worstCaseOutputTokens(request, reference.provider, catalog);
  // A prompt with cache breakpoints may be written to the cache whole, at the cache-write price (above the input price).
  const tokens = { inputTokens: input, outputTokens: output, cacheWriteTokens: hasCacheBreakpoints(request) ? input : 0 };
  // One rating serves both routes: developer_key at cost charges the catalog cost of the tokens,
  // which is the platform rating's upstream cost (the same prices, tokens and rounding).
  const platform = worstCasePlatformRating(env, reference, tokens, catalog);
  return {
    platform: platform?.retailUsd ?? null,
    developerKeyAtCost: platform?.upstreamCostUsd ?? null,
    worstCaseTokens: input + output,
    worstCaseInputTokens: input,
    worstCaseOutputTokens: output,
  };
}

function worstCasePlatformRating(
  env: Env,
  reference: ModelReference,
  tokens: { inputTokens: number; outputTokens: number; cacheWriteTokens: number },
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
