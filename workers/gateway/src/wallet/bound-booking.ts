/**
 * A leased call the gateway never settled (its isolate ended mid-call) is booked, once its deadline
 * and grace have passed, at its bound: the one rule the stale-call sweeper applies too
 * (workers/shared/calls/rate-at-bound.ts, docs/money.md "The guarantee"), over the candidates and
 * bounds the object stored at authorization, within the feature's output cap.
 */
import { bookingElement } from '#shared/ledger/book-usage-batch.ts';
import { rateAtBound } from '#shared/calls/rate-at-bound.ts';
import { formatUsd } from '#shared/money/index.ts';
import type { Env } from '#shared/env.ts';
import { featurePricingFromRow, featurePricingMetadata, ratingSettingsFor } from '#shared/rating/index.ts';
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
  const costliest = rateAtBound(
    {
      // On the byok route the bound is the open fee, whatever the tokens.
      routeMode: rating.routeMode ?? 'platform',
      candidates: rating.candidates.map((candidate) => ({
        provider: candidate.provider,
        model: candidate.model,
        inputTokens: candidate.boundInputTokens,
        outputTokens: Math.min(candidate.boundOutputTokens, rating.maxOutputTokens ?? candidate.boundOutputTokens),
      })),
      pricedAt: new Date(rating.authorizedAt),
      cacheLifetime: rating.cacheLifetime ?? null,
    },
    featurePricing,
    settings,
  );
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
