/**
 * rateUsage computes its amounts on bigints through the money module (no dinero arithmetic per
 * step). Here it is compared with the rating as it was written on dinero.js's generic functions,
 * kept below as the reference: every amount (units, scale, currency) and every recorded price must
 * match, for generated calls on every route, with generated catalog prices, feature prices and
 * settings, and for the real catalog's models.
 */
import { add, dinero, down, multiply, subtract, toSnapshot, transformScale, up, USD } from 'dinero.js/bigint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rounding, Usd } from '../money/index.ts';
import {
  catalogSourcesOf,
  currentPriceCatalog,
  findModelPrice,
  PriceCatalog,
  pricesAt,
  rateUsage,
  type CatalogModel,
  type FeaturePricing,
  type ModelPrice,
  type PriceClass,
  type RatedUsage,
  type RatingSettings,
  type UsageToRate,
} from './index.ts';
import type { PriceConstraint, TieredModelPrice, TieredPrice } from './price-types.ts';
// Unchanged by the bigint rewrite: the reference resolves a price as rateUsage does.
import { resolvePrice } from './rate-usage.ts';

// ---- The reference: the money functions and the rating before they computed on bigints. ----

const usdAt = (amount: bigint, scale = 8n): Usd =>
  dinero({ amount, currency: USD as { code: 'USD'; base: bigint; exponent: bigint }, scale });
const roundToScale = (amount: Usd, rounding: Rounding): Usd =>
  usdAt(toSnapshot(transformScale(amount, 8n, rounding === 'up' ? up : down)).amount);
const addUsd = (...amounts: Usd[]): Usd => amounts.reduce((sum, amount) => add(sum, amount), usdAt(0n));
const applyBasisPoints = (amount: Usd, basisPoints: number, rounding: Rounding): Usd =>
  roundToScale(multiply(amount, { amount: BigInt(basisPoints), scale: 4n }), rounding);
const priceTokensExact = (price: Usd, tokens: bigint): Usd => multiply(price, { amount: tokens, scale: 6n });

function referenceModelPriceAt(model: CatalogModel, at: Date, inputTokens: bigint): ModelPrice {
  const tierPrice = (price: TieredPrice) => {
    let rate = price.base;
    for (const tier of price.tiers) if (inputTokens > BigInt(tier.above)) rate = tier.price;
    return rate;
  };
  const prices = pricesAt(model, at);
  const result: ModelPrice = { inputPerMillion: tierPrice(prices.inputPerMillion), outputPerMillion: tierPrice(prices.outputPerMillion) };
  for (const [priceClass, price] of Object.entries(prices) as Array<[PriceClass, TieredPrice | undefined]>) {
    if (price) result[priceClass] = tierPrice(price);
  }
  return result;
}

/** The money of a valid call, as rateUsage computed it on dinero (the validation is unchanged code). */
function referenceRating(usage: UsageToRate, feature: FeaturePricing, settings: RatingSettings, catalog: PriceCatalog) {
  const count = (value: number | undefined) => BigInt(value ?? 0);
  const [input, output] = [count(usage.inputTokens), count(usage.outputTokens)];
  const [cached, write, audioIn] = [count(usage.cachedInputTokens), count(usage.cacheWriteTokens), count(usage.audioInputTokens)];
  const write1h = count(usage.cacheWrite1hTokens);
  const [audioOut, reasoning] = [count(usage.audioOutputTokens), count(usage.reasoningTokens)];
  const costOf = (price: ModelPrice) => {
    const rates = resolvePrice(price);
    const exact = addUsd(
      priceTokensExact(rates.inputPerMillion, input - cached - write - write1h - audioIn),
      priceTokensExact(rates.cachedInputPerMillion, cached),
      priceTokensExact(rates.cacheWritePerMillion, write),
      priceTokensExact(rates.cacheWrite1hPerMillion, write1h),
      priceTokensExact(rates.audioInputPerMillion, audioIn),
      priceTokensExact(rates.outputPerMillion, output - audioOut - reasoning),
      priceTokensExact(rates.reasoningPerMillion, reasoning),
      priceTokensExact(rates.audioOutputPerMillion, audioOut),
    );
    return roundToScale(exact, 'up');
  };
  const catalogPrice = () => {
    const model = findModelPrice(catalog, usage.provider, usage.model);
    if (!model) throw new Error('the generated call names an unpriced model');
    return resolvePrice(referenceModelPriceAt(model, usage.pricedAt ?? new Date(), input));
  };
  const splitFee = (retailUsd: Usd) => {
    const platformShareUsd = applyBasisPoints(retailUsd, settings.platformFeeBps, 'up');
    return { developerRevenueUsd: subtract(retailUsd, platformShareUsd), platformShareUsd };
  };
  const zero = usdAt(0n);
  switch (usage.routeMode) {
    case 'platform': {
      const prices = catalogPrice();
      const upstreamCostUsd = costOf(prices);
      const retailUsd = addUsd(upstreamCostUsd, applyBasisPoints(upstreamCostUsd, settings.platformMarkupBps, 'up'));
      const margin = subtract(retailUsd, upstreamCostUsd);
      const developerRevenueUsd = applyBasisPoints(margin, settings.channelShareBps, 'down');
      const platformShareUsd = subtract(margin, developerRevenueUsd);
      return {
        catalogVersion: catalog.version,
        prices,
        upstreamCostUsd,
        upstreamPayableUsd: upstreamCostUsd,
        retailUsd,
        developerRevenueUsd,
        platformShareUsd,
      };
    }
    case 'developer_key': {
      if (feature.developerPrice && usage.provider === 'custom' && !findModelPrice(catalog, usage.provider, usage.model)) {
        const retailUsd = costOf(feature.developerPrice);
        return { catalogVersion: null, prices: null, upstreamCostUsd: zero, upstreamPayableUsd: zero, retailUsd, ...splitFee(retailUsd) };
      }
      const prices = catalogPrice();
      const upstreamCostUsd = costOf(prices);
      const retailUsd = feature.developerPrice ? costOf(feature.developerPrice) : upstreamCostUsd;
      return { catalogVersion: catalog.version, prices, upstreamCostUsd, upstreamPayableUsd: zero, retailUsd, ...splitFee(retailUsd) };
    }
    default: {
      const retailUsd = feature.openFeeUsd ?? zero;
      return { catalogVersion: null, prices: null, upstreamCostUsd: zero, upstreamPayableUsd: zero, retailUsd, ...splitFee(retailUsd) };
    }
  }
}

// ---- The comparison. ----

/** An amount down to its scale and currency: a result must match in each, not just in its printed value. */
const exactly = (amount: Usd) => {
  const { amount: units, scale, currency } = toSnapshot(amount);
  return { units, scale, currency: { ...currency } };
};
type RatedMoney = Pick<
  RatedUsage,
  'catalogVersion' | 'prices' | 'upstreamCostUsd' | 'upstreamPayableUsd' | 'retailUsd' | 'developerRevenueUsd' | 'platformShareUsd'
>;
const moneyOf = (rated: RatedMoney) => ({
  catalogVersion: rated.catalogVersion,
  prices: rated.prices && Object.fromEntries(Object.entries(rated.prices).map(([priceClass, price]) => [priceClass, exactly(price)])),
  upstreamCostUsd: exactly(rated.upstreamCostUsd),
  upstreamPayableUsd: exactly(rated.upstreamPayableUsd),
  retailUsd: exactly(rated.retailUsd),
  developerRevenueUsd: exactly(rated.developerRevenueUsd),
  platformShareUsd: exactly(rated.platformShareUsd),
});

/** Prices of up to 8 decimals and up to 10,000 USD per million, with the edges of rounding among them. */
const price = fc
  .oneof(fc.bigInt({ min: 0n, max: 1_000_000_000_000n }), fc.constantFrom(0n, 1n, 7n, 15_000_000n, 33_333_333n, 99_999_999n))
  .map((units) => usdAt(units));
const tieredPrice: fc.Arbitrary<TieredPrice> = fc.record({
  base: price,
  tiers: fc
    .array(fc.record({ above: fc.oneof(fc.nat({ max: 2_000_000 }), fc.constantFrom(0, 1, 1_000, 200_000, 1_000_000)), price }), {
      maxLength: 2,
    })
    .map((tiers) => tiers.sort((left, right) => left.above - right.above)),
});
const periodPrices: fc.Arbitrary<TieredModelPrice> = fc.record(
  {
    inputPerMillion: tieredPrice,
    outputPerMillion: tieredPrice,
    cachedInputPerMillion: tieredPrice,
    cacheWritePerMillion: tieredPrice,
    cacheWrite1hPerMillion: tieredPrice,
    audioInputPerMillion: tieredPrice,
    audioOutputPerMillion: tieredPrice,
    reasoningPerMillion: tieredPrice,
  },
  { requiredKeys: ['inputPerMillion', 'outputPerMillion'] },
);
const constraint: fc.Arbitrary<PriceConstraint | null> = fc.oneof(
  fc.constant(null),
  fc
    .integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 })
    .map((fromMs) => ({ type: 'from_date' as const, startDate: 'generated', fromMs })),
  fc
    .tuple(fc.nat({ max: 86_399 }), fc.nat({ max: 86_399 }))
    .map(([startSecond, endSecond]) => ({ type: 'time_of_day' as const, startSecond, endSecond })),
);
const generatedCatalog = fc
  .array(fc.record({ constraint, prices: periodPrices }), { minLength: 1, maxLength: 3 })
  .map(
    (periods) =>
      new PriceCatalog(
        'generated',
        catalogSourcesOf([{ provider: 'generated', model: 'model', name: 'model', contextWindow: null, periods }]),
      ),
  );

const tokenCount = fc.oneof(
  fc.nat({ max: 5_000_000 }),
  fc.nat({ max: 1_000 }),
  fc.constantFrom(0, 1, 999_999, 1_000_000, 1_000_001, 200_000, 200_001),
);
const share = fc.nat({ max: 100 });
/** A valid call's token counts: each part within its whole. */
const tokens = fc
  .tuple(tokenCount, tokenCount, share, share, share, share, share, share)
  .map(([inputTokens, outputTokens, cachedShare, writeShare, write1hShare, audioInShare, reasoningShare, audioOutShare]) => {
    const cachedInputTokens = Math.floor((inputTokens * cachedShare) / 100);
    const cacheWriteTokens = Math.floor(((inputTokens - cachedInputTokens) * writeShare) / 100);
    const cacheWrite1hTokens = Math.floor(((inputTokens - cachedInputTokens - cacheWriteTokens) * write1hShare) / 100);
    const cacheLeft = inputTokens - cachedInputTokens - cacheWriteTokens - cacheWrite1hTokens;
    const audioInputTokens = Math.floor((cacheLeft * audioInShare) / 100);
    const reasoningTokens = Math.floor((outputTokens * reasoningShare) / 100);
    const audioOutputTokens = Math.floor(((outputTokens - reasoningTokens) * audioOutShare) / 100);
    return {
      inputTokens,
      outputTokens,
      cachedInputTokens,
      cacheWriteTokens,
      cacheWrite1hTokens,
      audioInputTokens,
      reasoningTokens,
      audioOutputTokens,
    };
  });
const settings: fc.Arbitrary<RatingSettings> = fc.record({
  platformMarkupBps: fc.oneof(fc.nat({ max: 100_000 }), fc.constantFrom(0, 1, 2_000, 3_333)),
  channelShareBps: fc.oneof(fc.nat({ max: 10_000 }), fc.constantFrom(0, 1, 5_000, 9_999, 10_000)),
  platformFeeBps: fc.oneof(fc.nat({ max: 10_000 }), fc.constantFrom(0, 1, 1_000, 9_999, 10_000)),
});
const feature: fc.Arbitrary<FeaturePricing> = fc.record(
  {
    developerPrice: fc.option(fc.record({ inputPerMillion: price, outputPerMillion: price }), { nil: undefined }),
    openFeeUsd: fc.option(price, { nil: undefined }),
  },
  { requiredKeys: [] },
);
const pricedAt = fc.date({ min: new Date('2023-01-01T00:00:00Z'), max: new Date('2027-12-31T23:59:59Z'), noInvalidDate: true });
const runs = { numRuns: 3_000 };

function expectSameRating(usage: UsageToRate, pricing: FeaturePricing, ratingSettings: RatingSettings, catalog: PriceCatalog) {
  expect(moneyOf(rateUsage(usage, pricing, ratingSettings, catalog))).toEqual(
    moneyOf(referenceRating(usage, pricing, ratingSettings, catalog)),
  );
}

describe('rateUsage agrees with the rating written on dinero, to the unit and the scale', () => {
  it('on every route, with generated catalog prices (tiers, periods), feature prices and settings', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('platform', 'developer_key', 'byok', 'local'),
        generatedCatalog,
        tokens,
        feature,
        settings,
        pricedAt,
        (routeMode, catalog, counts, pricing, ratingSettings, at) => {
          const usage = { routeMode, provider: 'generated', model: 'model', ...counts, estimated: false, pricedAt: at };
          expectSameRating(usage, pricing, ratingSettings, catalog);
        },
      ),
      runs,
    );
  });

  it("on the developer_key route for a developer's own custom server, at the feature price alone", () => {
    fc.assert(
      fc.property(
        tokens,
        fc.record({ inputPerMillion: price, outputPerMillion: price }),
        settings,
        (counts, developerPrice, ratingSettings) => {
          const usage = { routeMode: 'developer_key', provider: 'custom', model: 'my-finetune', ...counts, estimated: true };
          expectSameRating(usage, { developerPrice }, ratingSettings, currentPriceCatalog);
        },
      ),
      runs,
    );
  });

  it("with the real catalog's models, at any time and input size", () => {
    const models = currentPriceCatalog.models().map(({ provider, model }) => ({ provider, model }));
    fc.assert(
      fc.property(
        fc.constantFrom('platform', 'developer_key'),
        fc.constantFrom(...models),
        tokens,
        feature,
        settings,
        pricedAt,
        (routeMode, { provider, model }, counts, pricing, ratingSettings, at) => {
          const usage = { routeMode, provider, model, ...counts, estimated: false, pricedAt: at };
          expectSameRating(usage, pricing, ratingSettings, currentPriceCatalog);
        },
      ),
      runs,
    );
  });
});
