import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addUsd, formatUsd, parseWireAmount, usdFromUnits } from '../money/index.ts';
import {
  currentPriceCatalog,
  defaultRatingSettings,
  rateUsage,
  RatingError,
  routeModes,
  type FeaturePricing,
  type RatingSettings,
  type UsageToRate,
} from './index.ts';

const usd = (text: string) => parseWireAmount(text);
const settings: RatingSettings = { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_000 };

interface Vector {
  name: string;
  usage: UsageToRate;
  feature?: FeaturePricing;
  expected: { upstream: string; payable: string; retail: string; developer: string; platform: string; catalog: string | null };
}

const vectors: Vector[] = [
  {
    name: 'platform, mock:echo, 1000 in / 500 out',
    usage: { routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens: 1_000, outputTokens: 500, estimated: false },
    expected: {
      upstream: '0.00200000',
      payable: '0.00200000',
      retail: '0.00240000',
      developer: '0.00020000',
      platform: '0.00020000',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'platform, gpt-4o-mini with 200 cached of 1234 input tokens',
    usage: {
      routeMode: 'platform',
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 1_234,
      cachedInputTokens: 200,
      outputTokens: 567,
      estimated: false,
    },
    expected: {
      upstream: '0.00051030',
      payable: '0.00051030',
      retail: '0.00061236',
      developer: '0.00005103',
      platform: '0.00005103',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'platform, one cached token: upstream and markup rounded up, channel share rounded down',
    usage: {
      routeMode: 'platform',
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 1,
      cachedInputTokens: 1,
      outputTokens: 0,
      estimated: true,
    },
    expected: {
      upstream: '0.00000008',
      payable: '0.00000008',
      retail: '0.00000010',
      developer: '0.00000001',
      platform: '0.00000001',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'platform, one input token: odd margin leaves the extra unit to the platform',
    usage: { routeMode: 'platform', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 1, outputTokens: 0, estimated: false },
    expected: {
      upstream: '0.00000015',
      payable: '0.00000015',
      retail: '0.00000018',
      developer: '0.00000001',
      platform: '0.00000002',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'platform, zero tokens costs nothing',
    usage: { routeMode: 'platform', provider: 'anthropic', model: 'claude-haiku-4-5', inputTokens: 0, outputTokens: 0, estimated: false },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00000000',
      developer: '0.00000000',
      platform: '0.00000000',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'developer_key, gpt-4.1-mini at the developer price',
    usage: {
      routeMode: 'developer_key',
      provider: 'openai',
      model: 'gpt-4.1-mini',
      inputTokens: 10_000,
      outputTokens: 2_000,
      estimated: false,
    },
    feature: { developerPrice: { inputPerMillion: usd('2.00000000'), outputPerMillion: usd('8.00000000') } },
    expected: {
      upstream: '0.00720000',
      payable: '0.00000000',
      retail: '0.03600000',
      developer: '0.03240000',
      platform: '0.00360000',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'developer_key without a developer price passes the catalog price through',
    usage: {
      routeMode: 'developer_key',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: 1_000,
      outputTokens: 100,
      estimated: false,
    },
    expected: {
      upstream: '0.00450000',
      payable: '0.00000000',
      retail: '0.00450000',
      developer: '0.00405000',
      platform: '0.00045000',
      catalog: '2026-11-22.1',
    },
  },
  {
    name: 'byok without a fee charges nothing',
    usage: { routeMode: 'byok', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 50_000, outputTokens: 9_000, estimated: false },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00000000',
      developer: '0.00000000',
      platform: '0.00000000',
      catalog: null,
    },
  },
  {
    name: 'byok with an open fee splits it with the platform',
    usage: { routeMode: 'byok', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 10, outputTokens: 10, estimated: false },
    feature: { openFeeUsd: usd('0.00100000') },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00100000',
      developer: '0.00090000',
      platform: '0.00010000',
      catalog: null,
    },
  },
  {
    name: 'local, any model name, no fee',
    usage: { routeMode: 'local', provider: 'ollama', model: 'llama3.2:3b', inputTokens: 700, outputTokens: 300, estimated: true },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00000000',
      developer: '0.00000000',
      platform: '0.00000000',
      catalog: null,
    },
  },
  {
    name: 'local with a one-unit fee: the platform fee rounds up',
    usage: { routeMode: 'local', provider: 'lmstudio', model: 'qwen', inputTokens: 1, outputTokens: 1, estimated: false },
    feature: { openFeeUsd: usd('0.00000001') },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00000001',
      developer: '0.00000000',
      platform: '0.00000001',
      catalog: null,
    },
  },
];

describe('rateUsage vectors', () => {
  it.each(vectors)('$name', ({ usage, feature, expected }) => {
    const rated = rateUsage(usage, feature, settings);
    expect({
      upstream: formatUsd(rated.upstreamCostUsd),
      payable: formatUsd(rated.upstreamPayableUsd),
      retail: formatUsd(rated.retailUsd),
      developer: formatUsd(rated.developerRevenueUsd),
      platform: formatUsd(rated.platformShareUsd),
      catalog: rated.catalogVersion,
    }).toEqual(expected);
    expect(rated.routeMode).toBe(usage.routeMode);
    expect(rated.estimated).toBe(usage.estimated);
  });

  it('covers every route mode', () => {
    expect(new Set(vectors.map((vector) => vector.usage.routeMode))).toEqual(new Set(routeModes));
  });
});

describe('rateUsage rejections', () => {
  const good: UsageToRate = { routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens: 1, outputTokens: 1, estimated: false };

  it.each([
    ['negative input tokens', { ...good, inputTokens: -1 }, 'negative_tokens'],
    ['negative output tokens', { ...good, outputTokens: -5 }, 'negative_tokens'],
    ['negative cached tokens', { ...good, cachedInputTokens: -1 }, 'negative_tokens'],
    ['fractional tokens', { ...good, inputTokens: 1.5 }, 'invalid_tokens'],
    ['more cached than input tokens', { ...good, cachedInputTokens: 2 }, 'invalid_tokens'],
    ['an unknown route', { ...good, routeMode: 'free' }, 'unknown_route'],
    ['an empty route', { ...good, routeMode: '' }, 'unknown_route'],
    ['an unpriced model on the platform route', { ...good, model: 'nope' }, 'unknown_model'],
    [
      'an unpriced model on the developer_key route',
      { ...good, routeMode: 'developer_key', provider: 'openai', model: 'gpt-9' },
      'unknown_model',
    ],
  ] as const)('rejects %s', (_label, usage, reason) => {
    let thrown: unknown;
    try {
      rateUsage(usage);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RatingError);
    expect((thrown as RatingError).reason).toBe(reason);
    expect((thrown as RatingError).code).toBe('invalid_request');
  });

  it('rejects settings out of range', () => {
    expect(() => rateUsage(good, {}, { ...defaultRatingSettings, channelShareBps: 10_001 })).toThrowError(RatingError);
    expect(() => rateUsage(good, {}, { ...defaultRatingSettings, platformMarkupBps: -1 })).toThrowError(RatingError);
  });
});

describe('rateUsage invariants', () => {
  const pricedModels = [...currentPriceCatalog.prices.keys()];

  it('retail always equals what is booked to the provider, the developer and the platform', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...routeModes),
        fc.constantFrom(...pricedModels),
        fc.nat({ max: 5_000_000 }),
        fc.nat({ max: 5_000_000 }),
        fc.nat({ max: 100 }),
        fc.record({
          platformMarkupBps: fc.nat({ max: 50_000 }),
          channelShareBps: fc.nat({ max: 10_000 }),
          platformFeeBps: fc.nat({ max: 10_000 }),
        }),
        fc.bigInt({ min: 0n, max: 10n ** 9n }),
        (routeMode, key, inputTokens, outputTokens, cachedPercent, ratingSettings, feeUnits) => {
          const [provider = '', model = ''] = key.split(':');
          const cachedInputTokens = Math.floor((inputTokens * cachedPercent) / 100);
          const rated = rateUsage(
            { routeMode, provider, model, inputTokens, outputTokens, cachedInputTokens, estimated: false },
            { openFeeUsd: usdFromUnits(feeUnits) },
            ratingSettings,
          );
          const booked = addUsd(rated.upstreamPayableUsd, rated.developerRevenueUsd, rated.platformShareUsd);
          expect(formatUsd(booked)).toBe(formatUsd(rated.retailUsd));
          expect(formatUsd(rated.developerRevenueUsd).startsWith('-')).toBe(false);
          expect(formatUsd(rated.platformShareUsd).startsWith('-')).toBe(false);
        },
      ),
    );
  });
});
