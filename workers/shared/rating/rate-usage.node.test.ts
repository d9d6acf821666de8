import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addUsd, formatUsd, parseWireAmount, usdFromUnits } from '../money/index.ts';
import { isProviderName } from '../providers/provider-catalog.ts';
import {
  catalogSourcesOf,
  currentPriceCatalog,
  PriceCatalog,
  type ResolvedPrice,
  type TieredModelPrice,
  defaultRatingSettings,
  rateUsage,
  RatingError,
  routeModes,
  type FeaturePricing,
  type RatingSettings,
  type UsageToRate,
} from './index.ts';

const usd = (text: string) => parseWireAmount(text);
const flatPrices = (prices: ResolvedPrice) =>
  Object.fromEntries(Object.entries(prices).map(([key, base]) => [key, { base, tiers: [] }])) as unknown as TieredModelPrice;
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
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
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: "developer_key, a developer's own custom server at the feature price: no catalog price, upstream cost unknown (0)",
    usage: {
      routeMode: 'developer_key',
      provider: 'custom',
      model: 'my-finetune',
      inputTokens: 10_000,
      outputTokens: 2_000,
      estimated: false,
    },
    feature: { developerPrice: { inputPerMillion: usd('0.50000000'), outputPerMillion: usd('0.50000000') } },
    expected: {
      upstream: '0.00000000',
      payable: '0.00000000',
      retail: '0.00600000',
      developer: '0.00540000',
      platform: '0.00060000',
      catalog: null,
    },
  },
  {
    name: 'platform, claude-haiku-4-5 with cache reads and cache writes, each at its own price',
    usage: {
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      inputTokens: 10_000,
      cachedInputTokens: 2_000,
      cacheWriteTokens: 3_000,
      outputTokens: 1_000,
      estimated: false,
    },
    // 5,000 × 1 + 2,000 × 0.10 + 3,000 × 1.25 + 1,000 × 5 per million.
    expected: {
      upstream: '0.01395000',
      payable: '0.01395000',
      retail: '0.01674000',
      developer: '0.00139500',
      platform: '0.00139500',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, claude-haiku-4-5 with five-minute and one-hour cache writes, each at its own price',
    usage: {
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      inputTokens: 10_000,
      cachedInputTokens: 2_000,
      cacheWriteTokens: 3_000,
      cacheWrite1hTokens: 1_000,
      outputTokens: 1_000,
      estimated: false,
    },
    // 4,000 × 1 + 2,000 × 0.10 + 3,000 × 1.25 + 1,000 × 2 (the one-hour write) + 1,000 × 5 per million.
    expected: {
      upstream: '0.01495000',
      payable: '0.01495000',
      retail: '0.01794000',
      developer: '0.00149500',
      platform: '0.00149500',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, claude-sonnet-4-5 above 200,000 input tokens: one-hour writes at the upper tier too',
    usage: {
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: 250_000,
      cacheWrite1hTokens: 100_000,
      outputTokens: 1_000,
      estimated: false,
    },
    // 150,000 × 6 + 100,000 × 12 + 1,000 × 22.50 per million.
    expected: {
      upstream: '2.12250000',
      payable: '2.12250000',
      retail: '2.54700000',
      developer: '0.21225000',
      platform: '0.21225000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, claude-sonnet-4-5 at exactly 200,000 input tokens stays at the base tier',
    usage: {
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: 200_000,
      outputTokens: 1_000,
      estimated: false,
    },
    expected: {
      upstream: '0.61500000',
      payable: '0.61500000',
      retail: '0.73800000',
      developer: '0.06150000',
      platform: '0.06150000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, claude-sonnet-4-5 above 200,000 input tokens: every token at the upper tier (6 / 22.50)',
    usage: {
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: 200_001,
      outputTokens: 1_000,
      estimated: false,
    },
    expected: {
      upstream: '1.22250600',
      payable: '1.22250600',
      retail: '1.46700720',
      developer: '0.12225060',
      platform: '0.12225060',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, o3 the second before its 2025-06-10 price cut (10 / 40)',
    usage: {
      routeMode: 'platform',
      provider: 'openai',
      model: 'o3',
      inputTokens: 1_000,
      outputTokens: 1_000,
      estimated: false,
      pricedAt: new Date('2025-06-09T23:59:59.999Z'),
    },
    expected: {
      upstream: '0.05000000',
      payable: '0.05000000',
      retail: '0.06000000',
      developer: '0.00500000',
      platform: '0.00500000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, o3 from 2025-06-10 on (2 / 8)',
    usage: {
      routeMode: 'platform',
      provider: 'openai',
      model: 'o3',
      inputTokens: 1_000,
      outputTokens: 1_000,
      estimated: false,
      pricedAt: new Date('2025-06-10T00:00:00Z'),
    },
    expected: {
      upstream: '0.01000000',
      payable: '0.01000000',
      retail: '0.01200000',
      developer: '0.00100000',
      platform: '0.00100000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, deepseek-chat during its standard hours (00:30-16:30 UTC: 0.27)',
    usage: {
      routeMode: 'platform',
      provider: 'deepseek',
      model: 'deepseek-chat',
      inputTokens: 1_000_000,
      outputTokens: 0,
      estimated: false,
      pricedAt: new Date('2026-01-01T16:29:59Z'),
    },
    expected: {
      upstream: '0.27000000',
      payable: '0.27000000',
      retail: '0.32400000',
      developer: '0.02700000',
      platform: '0.02700000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, deepseek-chat off-peak (from 16:30 UTC, end exclusive: 0.135)',
    usage: {
      routeMode: 'platform',
      provider: 'deepseek',
      model: 'deepseek-chat',
      inputTokens: 1_000_000,
      outputTokens: 0,
      estimated: false,
      pricedAt: new Date('2026-01-01T16:30:00Z'),
    },
    expected: {
      upstream: '0.13500000',
      payable: '0.13500000',
      retail: '0.16200000',
      developer: '0.01350000',
      platform: '0.01350000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, gpt-audio: audio input and output at their own prices (32 / 64)',
    usage: {
      routeMode: 'platform',
      provider: 'openai',
      model: 'gpt-audio',
      inputTokens: 1_000,
      audioInputTokens: 400,
      outputTokens: 500,
      audioOutputTokens: 200,
      estimated: false,
    },
    // 600 × 2.5 + 400 × 32 + 300 × 10 + 200 × 64 per million.
    expected: {
      upstream: '0.03010000',
      payable: '0.03010000',
      retail: '0.03612000',
      developer: '0.00301000',
      platform: '0.00301000',
      catalog: 'genai-prices@0.1.8+faucet.3',
    },
  },
  {
    name: 'platform, a model pricing reasoning apart (perplexity/sonar-deep-research via OpenRouter: 3)',
    usage: {
      routeMode: 'platform',
      provider: 'openrouter',
      model: 'perplexity/sonar-deep-research',
      inputTokens: 100,
      outputTokens: 1_000,
      reasoningTokens: 600,
      estimated: false,
    },
    // 100 × 2 + 400 × 8 + 600 × 3 per million.
    expected: {
      upstream: '0.00520000',
      payable: '0.00520000',
      retail: '0.00624000',
      developer: '0.00052000',
      platform: '0.00052000',
      catalog: 'genai-prices@0.1.8+faucet.3',
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
    expect(rated.prices === null).toBe(expected.catalog === null);
  });

  it('covers every route mode', () => {
    expect(new Set(vectors.map((vector) => vector.usage.routeMode))).toEqual(new Set(routeModes));
  });
});

describe('rateUsage keeps the prices it used', () => {
  it('records the per-million price of every class, a class without its own at the price of its whole', () => {
    const rated = rateUsage(
      { routeMode: 'platform', provider: 'anthropic', model: 'claude-haiku-4-5', inputTokens: 10, outputTokens: 10, estimated: false },
      {},
      settings,
    );
    expect(Object.fromEntries(Object.entries(rated.prices ?? {}).map(([key, value]) => [key, formatUsd(value)]))).toEqual({
      inputPerMillion: '1.00000000',
      cachedInputPerMillion: '0.10000000',
      cacheWritePerMillion: '1.25000000',
      cacheWrite1hPerMillion: '2.00000000',
      audioInputPerMillion: '1.00000000',
      outputPerMillion: '5.00000000',
      reasoningPerMillion: '5.00000000',
      audioOutputPerMillion: '5.00000000',
    });
  });

  it('rates a one-hour cache write without a price of its own at the cache-write price, else at the input price', () => {
    const catalog = (prices: TieredModelPrice) =>
      new PriceCatalog(
        't',
        catalogSourcesOf([{ provider: 'p', model: 'm', name: 'm', contextWindow: null, periods: [{ constraint: null, prices }] }]),
      );
    const flat = (text: string) => ({ base: usd(text), tiers: [] });
    const usage: UsageToRate = {
      routeMode: 'platform',
      provider: 'p',
      model: 'm',
      inputTokens: 1_000_000,
      cacheWrite1hTokens: 1_000_000,
      outputTokens: 0,
      estimated: false,
    };
    const withWrite = rateUsage(
      usage,
      {},
      settings,
      catalog({ inputPerMillion: flat('1.00000000'), outputPerMillion: flat('2.00000000'), cacheWritePerMillion: flat('1.25000000') }),
    );
    expect(formatUsd(withWrite.upstreamCostUsd)).toBe('1.25000000');
    const inputOnly = rateUsage(
      usage,
      {},
      settings,
      catalog({ inputPerMillion: flat('1.00000000'), outputPerMillion: flat('2.00000000') }),
    );
    expect(formatUsd(inputOnly.upstreamCostUsd)).toBe('1.00000000');
    expect(inputOnly.cacheWrite1hTokens).toBe(1_000_000);
  });

  it('records the tier the call was rated at', () => {
    const usage = { routeMode: 'developer_key', provider: 'anthropic', model: 'claude-sonnet-4-5', outputTokens: 1, estimated: false };
    const base = rateUsage({ ...usage, inputTokens: 200_000 }, {}, settings).prices;
    const upper = rateUsage({ ...usage, inputTokens: 200_001 }, {}, settings).prices;
    expect(base && formatUsd(base.inputPerMillion)).toBe('3.00000000');
    expect(upper && [formatUsd(upper.inputPerMillion), formatUsd(upper.cachedInputPerMillion), formatUsd(upper.outputPerMillion)]).toEqual([
      '6.00000000',
      '0.60000000',
      '22.50000000',
    ]);
  });

  it('re-rates from the recorded prices alone to the same upstream cost', () => {
    const rated = rateUsage(
      {
        routeMode: 'platform',
        provider: 'anthropic',
        model: 'claude-haiku-4-5',
        inputTokens: 123_457,
        cachedInputTokens: 20_001,
        cacheWriteTokens: 3_333,
        cacheWrite1hTokens: 1_111,
        outputTokens: 7_777,
        estimated: false,
      },
      {},
      settings,
    );
    const prices = rated.prices;
    if (!prices) throw new Error('no prices');
    const replay = rateUsage(
      { ...rated, routeMode: 'platform', model: 'replayed', provider: 'record' },
      {},
      settings,
      new PriceCatalog(
        'record',
        catalogSourcesOf([
          {
            provider: 'record',
            model: 'replayed',
            name: 'r',
            contextWindow: null,
            periods: [{ constraint: null, prices: flatPrices(prices) }],
          },
        ]),
      ),
    );
    expect(formatUsd(replay.upstreamCostUsd)).toBe(formatUsd(rated.upstreamCostUsd));
    expect(formatUsd(replay.retailUsd)).toBe(formatUsd(rated.retailUsd));
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
    ['negative cache write tokens', { ...good, cacheWriteTokens: -1 }, 'negative_tokens'],
    ['cache reads and writes above the input', { ...good, cachedInputTokens: 1, cacheWriteTokens: 1 }, 'invalid_tokens'],
    ['negative one-hour cache write tokens', { ...good, cacheWrite1hTokens: -1 }, 'negative_tokens'],
    ['fractional one-hour cache write tokens', { ...good, cacheWrite1hTokens: 0.5 }, 'invalid_tokens'],
    ['five-minute and one-hour writes above the input', { ...good, cacheWriteTokens: 1, cacheWrite1hTokens: 1 }, 'invalid_tokens'],
    ['audio input above what the cache leaves', { ...good, inputTokens: 2, cachedInputTokens: 1, audioInputTokens: 2 }, 'invalid_tokens'],
    ['audio output and reasoning above the output', { ...good, audioOutputTokens: 1, reasoningTokens: 1 }, 'invalid_tokens'],
    ['fractional reasoning tokens', { ...good, reasoningTokens: 0.5 }, 'invalid_tokens'],
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

describe('rateUsage of models the catalog does not price, on developer_key', () => {
  const price = { developerPrice: { inputPerMillion: usd('1.00000000'), outputPerMillion: usd('1.00000000') } };
  const usage = (provider: string, model: string): UsageToRate => ({
    routeMode: 'developer_key',
    provider,
    model,
    inputTokens: 10,
    outputTokens: 10,
    estimated: false,
  });

  it.each([
    ['a custom model without a feature price', usage('custom', 'my-finetune'), {}],
    ['a custom model with a null feature price', usage('custom', 'my-finetune'), { developerPrice: null }],
    ['an unpriced model of a catalog provider, even with a feature price', usage('openai', 'gpt-9'), price],
    ['an unpriced azure deployment, even with a feature price', usage('azure', 'my-deployment'), price],
  ] as const)('rejects %s (only a custom server is rated at the feature price alone)', (_label, rated, feature) => {
    expect(() => rateUsage(rated, feature)).toThrow(RatingError);
  });

  it('a custom model is refused on the platform route whatever the feature price', () => {
    expect(() => rateUsage({ ...usage('custom', 'my-finetune'), routeMode: 'platform' }, price)).toThrow(RatingError);
  });
});

describe('rateUsage invariants', () => {
  const pricedModels = currentPriceCatalog.models(isProviderName).map(({ provider, model }) => ({ provider, model }));

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
        (routeMode, { provider, model }, inputTokens, outputTokens, cachedPercent, ratingSettings, feeUnits) => {
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
