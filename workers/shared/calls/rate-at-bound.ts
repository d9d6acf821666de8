/**
 * The one rule for booking a call that was never settled (its isolate ended mid-call), used by the
 * stale-call sweeper and by the wallet object alike: the call is rated at its bound — the worst-case
 * tokens its hold was sized for, marked estimated — at the costliest candidate its route could have
 * tried, since which one answered is unknown. Never at a cheaper first model: the platform is never
 * left paying more upstream than it billed.
 *
 * - A candidate's output is its bound, never past the model's own output cap (no model answers past it).
 * - Costliest means the largest retail, then the largest upstream cost.
 * - The first candidate must be priced (its error is the call's); a fallback the catalog cannot price
 *   is skipped: on a priced route the hold could not have covered it, so it was never tried.
 * - The prices are those of the call's authorization (`pricedAt`, the feature pricing and settings
 *   recorded with it), so the booking stays within the call's hold.
 */
import { compareUsd } from '../money/index.ts';
import { outputTokenCap } from '../rating/model-limits.ts';
import { rateUsage, type FeaturePricing, type RatedUsage, type RatingSettings, type RouteMode } from '../rating/index.ts';

export interface BoundCandidate {
  provider: string;
  model: string;
  /** The worst-case input tokens its hold was sized for. */
  inputTokens: number;
  /** The worst-case output tokens its hold was sized for (a feature's cap already applied). */
  outputTokens: number;
}

export interface CallAtBound {
  routeMode: RouteMode;
  /** The call's first model, then each fallback its route could try. */
  candidates: readonly BoundCandidate[];
  /** When the call was authorized: picks the catalog's price period. */
  pricedAt: Date;
  /**
   * The longest lifetime of the prompt's cache breakpoints (null: none): all of the input is booked at
   * that lifetime's cache-write price, as the hold priced it (the provider may have written all of it).
   */
  cacheLifetime?: '5m' | '1h' | null;
}

export function rateAtBound(call: CallAtBound, pricing: FeaturePricing, settings: RatingSettings): RatedUsage {
  const [first, ...listed] = call.candidates;
  if (first === undefined) throw new Error('a call rated at its bound has at least one candidate');
  // On the developer_key route only the key's provider can answer: a fallback of another provider is
  // never tried with that key, so it never sets the bound (nor books under the key).
  const fallbacks = call.routeMode === 'developer_key' ? listed.filter((candidate) => candidate.provider === first.provider) : listed;
  const rate = (candidate: BoundCandidate) =>
    rateUsage(
      {
        routeMode: call.routeMode,
        provider: candidate.provider,
        model: candidate.model,
        inputTokens: candidate.inputTokens,
        cacheWriteTokens: call.cacheLifetime === '5m' ? candidate.inputTokens : 0,
        cacheWrite1hTokens: call.cacheLifetime === '1h' ? candidate.inputTokens : 0,
        outputTokens: Math.min(candidate.outputTokens, outputTokenCap(candidate.provider, candidate.model)),
        estimated: true,
        pricedAt: call.pricedAt,
      },
      pricing,
      settings,
    );
  let costliest = rate(first);
  for (const candidate of fallbacks) {
    let rated: RatedUsage;
    try {
      rated = rate(candidate);
    } catch {
      continue;
    }
    const byRetail = compareUsd(rated.retailUsd, costliest.retailUsd);
    if (byRetail > 0 || (byRetail === 0 && compareUsd(rated.upstreamCostUsd, costliest.upstreamCostUsd) > 0)) costliest = rated;
  }
  return costliest;
}
