/**
 * A leased call the gateway never settled (its isolate ended mid-call) is booked, once its deadline
 * and grace have passed, at its bound: the costliest of its candidates at their worst-case tokens,
 * within the feature's output cap, marked estimated — the stale-call sweeper's rule for calls of the
 * per-call path (workers/shared/calls/, docs/money.md "The guarantee").
 */
import { bookingElement } from '#shared/ledger/book-usage-batch.ts';
import { compareUsd, formatUsd } from '#shared/money/index.ts';
import type { Env } from '#shared/env.ts';
import { featurePricingFromRow, featurePricingMetadata, rateUsage, ratingSettingsFor, type RatedUsage } from '#shared/rating/index.ts';
import type { WalletSettlement } from '#shared/durable-objects.ts';
import type { StoredCall } from './lease-book.ts';

export function boundBooking(env: Env, call: StoredCall): WalletSettlement {
  const { rating } = call;
  const featurePricing = featurePricingFromRow({
    developerPricePerMtokUsd: rating.developerPricePerMtokUsd,
    openFeeUsd: rating.openFeeUsd,
  });
  const settings = {
    platformMarkupBps: rating.platformMarkupBps,
    platformFeeBps: rating.platformFeeBps,
    channelShareBps: ratingSettingsFor(env, rating.developerShareBps).channelShareBps,
  };
  let costliest: RatedUsage | null = null;
  for (const candidate of rating.candidates) {
    const outputTokens = Math.min(candidate.boundOutputTokens, rating.maxOutputTokens ?? candidate.boundOutputTokens);
    const rated = rateUsage(
      {
        // On the byok route the bound is the open fee, whatever the tokens.
        routeMode: rating.routeMode ?? 'platform',
        provider: candidate.provider,
        model: candidate.model,
        inputTokens: candidate.boundInputTokens,
        outputTokens,
        estimated: true,
        pricedAt: new Date(rating.authorizedAt),
      },
      featurePricing,
      settings,
    );
    if (costliest === null || compareUsd(rated.retailUsd, costliest.retailUsd) > 0) costliest = rated;
  }
  if (costliest === null) throw new Error('a leased call has no candidate to book');
  return {
    booking: bookingElement({
      requestId: call.moneyKey,
      clientRequestId: call.clientRequestId,
      callId: call.id,
      appId: rating.appId,
      endUserId: rating.endUserId,
      featureKey: rating.featureKey,
      rated: costliest,
      providerCredentialId: rating.providerCredentialId ?? null,
      allowReceivable: true,
      metadata: { feature_pricing: featurePricingMetadata(rating.featureKey, featurePricing), swept: true },
    }),
    retailUsd: formatUsd(costliest.retailUsd),
  };
}
