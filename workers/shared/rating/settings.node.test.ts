import { describe, expect, it } from 'vitest';
import { formatUsd } from '../money/index.ts';
import { defaultRatingSettings, featurePricingFromRow, ratingSettingsFor } from './index.ts';

describe('ratingSettingsFor', () => {
  it('uses the defaults when nothing is configured', () => {
    expect(ratingSettingsFor({}, undefined)).toEqual(defaultRatingSettings);
  });

  it('reads the platform percentages from the environment and the channel share from the app', () => {
    expect(ratingSettingsFor({ PLATFORM_MARKUP_BPS: '3000', PLATFORM_FEE_BPS: '250' }, 7000)).toEqual({
      platformMarkupBps: 3000,
      platformFeeBps: 250,
      channelShareBps: 7000,
    });
  });

  it('ignores malformed or out-of-range values', () => {
    expect(ratingSettingsFor({ PLATFORM_MARKUP_BPS: '-1', PLATFORM_FEE_BPS: '10001' }, 10_001)).toEqual(defaultRatingSettings);
    expect(ratingSettingsFor({ PLATFORM_MARKUP_BPS: '1e3', PLATFORM_FEE_BPS: 5 }, 1.5)).toEqual(defaultRatingSettings);
  });
});

describe('featurePricingFromRow', () => {
  it('applies the one developer price to input and output tokens', () => {
    const pricing = featurePricingFromRow({ developerPricePerMtokUsd: '2.50000000', openFeeUsd: '0.00000000' });
    expect(pricing.developerPrice && formatUsd(pricing.developerPrice.inputPerMillion)).toBe('2.50000000');
    expect(pricing.developerPrice && formatUsd(pricing.developerPrice.outputPerMillion)).toBe('2.50000000');
    expect(pricing.openFeeUsd && formatUsd(pricing.openFeeUsd)).toBe('0.00000000');
  });

  it('leaves the developer price out when the feature has none', () => {
    expect(featurePricingFromRow({ developerPricePerMtokUsd: null, openFeeUsd: '0.00100000' }).developerPrice).toBeNull();
    expect(featurePricingFromRow(null)).toEqual({});
  });
});
