/**
 * Where rating inputs come from: the platform's percentages from the environment (with the documented
 * defaults), the channel share from the app, the feature's prices from its row.
 */
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import { defaultRatingSettings, type FeaturePricing, type RatingSettings } from './rate-usage.ts';

/** Worker bindings; reads `PLATFORM_MARKUP_BPS` and `PLATFORM_FEE_BPS` (basis points, as strings). */
export type RatingEnv = { readonly [key: string]: unknown };

function basisPoints(value: unknown, fallback: number, max: number): number {
  if (typeof value !== 'string' || !/^\d{1,6}$/.test(value)) return fallback;
  const parsed = Number(value);
  return parsed <= max ? parsed : fallback;
}

/** `developerShareBps` is the app's channel share of the platform margin (`apps.developer_share_bps`). */
export function ratingSettingsFor(env: RatingEnv, developerShareBps: number | null | undefined): RatingSettings {
  return {
    platformMarkupBps: basisPoints(env.PLATFORM_MARKUP_BPS, defaultRatingSettings.platformMarkupBps, 100_000),
    platformFeeBps: basisPoints(env.PLATFORM_FEE_BPS, defaultRatingSettings.platformFeeBps, 10_000),
    channelShareBps:
      typeof developerShareBps === 'number' &&
      Number.isSafeInteger(developerShareBps) &&
      developerShareBps >= 0 &&
      developerShareBps <= 10_000
        ? developerShareBps
        : defaultRatingSettings.channelShareBps,
  };
}

export interface FeaturePriceRow {
  /** `app_features.developer_price_per_mtok_usd`: one price per million tokens, input and output alike. */
  developerPricePerMtokUsd: string | null;
  /** `app_features.open_fee_usd`. */
  openFeeUsd: string | null;
}

export function featurePricingFromRow(row: FeaturePriceRow | null | undefined): FeaturePricing {
  if (!row) return {};
  return featurePricingOf(
    row.developerPricePerMtokUsd === null ? null : parseDatabaseAmount(row.developerPricePerMtokUsd),
    row.openFeeUsd === null ? null : parseDatabaseAmount(row.openFeeUsd),
  );
}

/** A feature's prices from its developer price per million tokens (input and output alike) and its open fee. */
export function featurePricingOf(developerPricePerMtok: Usd | null, openFee: Usd | null): FeaturePricing {
  return {
    developerPrice: developerPricePerMtok ? { inputPerMillion: developerPricePerMtok, outputPerMillion: developerPricePerMtok } : null,
    openFeeUsd: openFee,
  };
}

/** The feature prices a booking used, as its ledger metadata records them (`feature_pricing`). */
export function featurePricingMetadata(featureKey: string, pricing: FeaturePricing) {
  const { developerPrice, openFeeUsd } = pricing;
  return {
    feature_key: featureKey,
    developer_price_per_mtok_usd: developerPrice ? formatUsd(developerPrice.outputPerMillion) : null,
    open_fee_usd: openFeeUsd ? formatUsd(openFeeUsd) : null,
  };
}
