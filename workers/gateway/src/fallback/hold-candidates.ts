/**
 * The hold covers every candidate the call may try (docs/models.md, "Fallback and aliases"): the
 * bounds passed to the authorize statement are, for each, the largest over the candidates — the
 * platform hold over those the platform can price, the developer key's catalog cost over those of
 * the call's own provider (the one key whose budget is reserved), the token bounds over all. A
 * candidate is later tried only if its own worst case on the route is within what was held
 * (`covered`), so no attempt can cost more than the hold; one the gateway cannot bound (a field its
 * protocol does not take) is never tried.
 */
import type { Env } from '#shared/env.ts';
import { compareUsd, type Usd } from '#shared/money/index.ts';
import type { PriceCatalog } from '#shared/rating/index.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { holdBounds, type HoldBounds } from '../metering/hold-bounds.ts';
import type { CallRoute } from '../routing/call-plan.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { requestForProtocol } from '../providers/accepted-fields.ts';

export interface Candidate {
  reference: ModelReference;
  /** The request as sent to this candidate (its model id). */
  request: ChatRequest;
  /** Null: the gateway cannot bound this request for it, so it is never tried. */
  bounds: HoldBounds | null;
}

/** The request as `reference`'s provider is sent it: its bare model name, in its protocol's fields. */
export function sentRequest(reference: ModelReference, request: ChatRequest): ChatRequest {
  return requestForProtocol(reference.entry.protocol, { ...request, model: reference.model });
}

export function candidateOf(env: Env, reference: ModelReference, request: ChatRequest, catalog?: PriceCatalog): Candidate {
  const sent = sentRequest(reference, request);
  try {
    return { reference, request: sent, bounds: holdBounds(env, reference, sent, catalog) };
  } catch {
    return { reference, request: sent, bounds: null };
  }
}

const larger = (a: Usd | null, b: Usd | null): Usd | null => (a === null ? b : b === null ? a : compareUsd(a, b) >= 0 ? a : b);

/** The bounds the statement holds: the primary's, raised to cover each fallback (the primary's null prices stay null: its route rules are unchanged). */
export function combinedBounds(
  primary: Pick<Candidate, 'reference'> & { bounds: HoldBounds },
  fallbacks: ReadonlyArray<Pick<Candidate, 'reference' | 'bounds'>>,
): HoldBounds {
  let bounds = { ...primary.bounds };
  for (const fallback of fallbacks) {
    if (fallback.bounds === null) continue;
    const sameProvider = fallback.reference.provider === primary.reference.provider;
    bounds = {
      platform: bounds.platform === null ? null : larger(bounds.platform, fallback.bounds.platform),
      developerKeyAtCost:
        bounds.developerKeyAtCost === null || !sameProvider
          ? bounds.developerKeyAtCost
          : larger(bounds.developerKeyAtCost, fallback.bounds.developerKeyAtCost),
      worstCaseTokens: Math.max(bounds.worstCaseTokens, fallback.bounds.worstCaseTokens),
      worstCaseInputTokens: Math.max(bounds.worstCaseInputTokens, fallback.bounds.worstCaseInputTokens),
      worstCaseOutputTokens: Math.max(bounds.worstCaseOutputTokens, fallback.bounds.worstCaseOutputTokens),
      wholeOutputTokens: Math.max(bounds.wholeOutputTokens, fallback.bounds.wholeOutputTokens),
      cacheLifetime: bounds.cacheLifetime === '1h' ? '1h' : (fallback.bounds.cacheLifetime ?? bounds.cacheLifetime),
      cuttable: bounds.cuttable && fallback.bounds.cuttable,
    };
  }
  return bounds;
}

/** Whether what was held covers this candidate's worst case on the call's route. */
export function covered(route: CallRoute, held: HoldBounds, candidate: Candidate): boolean {
  const own = candidate.bounds;
  if (own === null) return false;
  if (own.worstCaseInputTokens > held.worstCaseInputTokens || own.worstCaseOutputTokens > held.worstCaseOutputTokens) return false;
  if (route === 'platform') return own.platform !== null && held.platform !== null && compareUsd(own.platform, held.platform) <= 0;
  if (route === 'developer_key') {
    return (
      own.developerKeyAtCost !== null &&
      held.developerKeyAtCost !== null &&
      compareUsd(own.developerKeyAtCost, held.developerKeyAtCost) <= 0
    );
  }
  // byok: the hold is the feature's open fee, the same whatever the model.
  return true;
}
