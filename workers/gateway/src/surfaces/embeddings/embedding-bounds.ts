/**
 * What an embeddings call holds before its upstream: the most input tokens it can be billed for, and
 * their worst-case price on each route. Embeddings produce no output tokens, so the input is the
 * whole bound. Token arrays count exactly (one token per id); text by its UTF-8 bytes (a byte-level
 * BPE token is at least one byte, as worst-case-tokens.ts bounds prompts) plus a few tokens per input
 * for the start and end markers a provider may add. The same bound is what a call is billed at when
 * its provider reports no usage (docs/money.md: never an estimate below the provider's count).
 */
import type { Env } from '#shared/env.ts';
import { currentPriceCatalog, type PriceCatalog, RatingError, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { HoldBounds } from '../../metering/hold-bounds.ts';
import type { ModelReference } from '../../routing/parse-model.ts';
import type { EmbeddingInput } from './embeddings-request.ts';

/** Markers a provider may add around each text input (none does for OpenAI; a bound must not assume so for all). */
export const markerTokensPerTextInput = 2;

/**
 * Largest bound one request may hold: OpenAI's 300,000-token limit per request at four bytes a token
 * (English averages about four), so no request OpenAI would serve is refused for its size.
 */
export const maxEmbeddingInputTokenBound = 1_200_000;

const encoder = new TextEncoder();

export function embeddingInputTokenBound(input: EmbeddingInput): number {
  if (input.kind === 'tokens') return input.tokens.reduce((total, ids) => total + ids.length, 0);
  return input.texts.reduce((total, text) => total + encoder.encode(text).byteLength + markerTokensPerTextInput, 0);
}

/**
 * The bounds the authorize statement holds, in the chat path's shape (metering/hold-bounds.ts) so the
 * one authorizer takes them unchanged: the platform retail price and the developer_key price at cost
 * of the input bound, both null when the catalog does not price the model.
 */
export function embeddingHoldBounds(
  env: Env,
  reference: ModelReference,
  input: EmbeddingInput,
  catalog: PriceCatalog = currentPriceCatalog,
): HoldBounds {
  const inputTokens = embeddingInputTokenBound(input);
  const rated = worstCaseRating(env, reference, inputTokens, catalog);
  return {
    platform: rated?.retailUsd ?? null,
    developerKeyAtCost: rated?.upstreamCostUsd ?? null,
    worstCaseTokens: inputTokens,
    worstCaseInputTokens: inputTokens,
    worstCaseOutputTokens: 0,
    wholeOutputTokens: 0,
    cacheLifetime: null,
    cuttable: false,
  };
}

function worstCaseRating(env: Env, reference: ModelReference, inputTokens: number, catalog: PriceCatalog) {
  try {
    return rateUsage(
      { routeMode: 'platform', provider: reference.provider, model: reference.model, inputTokens, outputTokens: 0, estimated: true },
      {},
      ratingSettingsFor(env, null),
      catalog,
    );
  } catch (error) {
    if (error instanceof RatingError && error.reason === 'unknown_model') return null;
    throw error;
  }
}
