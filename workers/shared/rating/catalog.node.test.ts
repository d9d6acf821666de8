import { readFileSync } from 'node:fs';
import { findProvider } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { formatUsd, type Usd } from '../money/index.ts';
import { currentPriceCatalog, modelPriceAt, type CatalogModel, type ModelPrice } from './catalog.ts';
import { decimalString, usdFromCatalogNumber } from './exact-decimal.ts';
import { catalogSources, genaiPricesVersion } from './genai-prices-catalog.ts';

const now = new Date('2026-11-23T12:00:00Z');

function find(key: string): CatalogModel {
  const colon = key.indexOf(':');
  const model = currentPriceCatalog.find(key.slice(0, colon), key.slice(colon + 1));
  if (!model) throw new Error(`${key} is not in the catalog`);
  return model;
}

function pricesOf(key: string, inputTokens = 0n, at = now): Record<string, string> {
  const price = modelPriceAt(find(key), at, inputTokens);
  return Object.fromEntries(Object.entries(price).map(([priceClass, amount]) => [priceClass, formatUsd(amount as Usd)]));
}

describe('decimalString: a float through its shortest decimal representation, never float arithmetic', () => {
  it.each([
    [0.15, '0.15'],
    [0.6, '0.6'],
    [3.75, '3.75'],
    [15, '15'],
    [3625e-6, '0.003625'],
    [1e-7, '0.0000001'],
    [2e5, '200000'],
    [1.5e21, '1500000000000000000000'],
    [0.1 + 0.2, '0.30000000000000004'],
    [0, '0'],
  ])('%s → %s', (value, text) => {
    expect(decimalString(value)).toBe(text);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])('refuses %s', (value) => {
    expect(decimalString(value)).toBeNull();
  });

  it('converts to money only what 8 decimals hold exactly', () => {
    expect(formatUsd(usdFromCatalogNumber(0.075) as Usd)).toBe('0.07500000');
    expect(formatUsd(usdFromCatalogNumber(1e-8) as Usd)).toBe('0.00000001');
    expect(usdFromCatalogNumber(1e-9)).toBeNull();
    expect(usdFromCatalogNumber(0.08333333333333334)).toBeNull();
    expect(usdFromCatalogNumber(0.1 + 0.2)).toBeNull();
    expect(usdFromCatalogNumber(1e13)).toBeNull();
  });
});

describe('the catalog version', () => {
  it('names the installed package version, pinned exactly in package.json', () => {
    const installed = JSON.parse(readFileSync('node_modules/@pydantic/genai-prices/package.json', 'utf8')) as { version: string };
    const project = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    expect(installed.version).toBe(genaiPricesVersion);
    expect(project.dependencies['@pydantic/genai-prices']).toBe(genaiPricesVersion);
    expect(currentPriceCatalog.version).toBe(`genai-prices@${genaiPricesVersion}+faucet.3`);
  });
});

describe('pinned prices (per million tokens, exact)', () => {
  it.each<[string, Record<string, string>]>([
    ['mock:echo', { inputPerMillion: '1.00000000', outputPerMillion: '2.00000000', cachedInputPerMillion: '0.50000000' }],
    ['mock:tools', { inputPerMillion: '1.00000000', outputPerMillion: '2.00000000', cachedInputPerMillion: '0.50000000' }],
    ['openai:gpt-4o-mini', { inputPerMillion: '0.15000000', cachedInputPerMillion: '0.07500000', outputPerMillion: '0.60000000' }],
    ['openai:gpt-4.1-mini', { inputPerMillion: '0.40000000', cachedInputPerMillion: '0.10000000', outputPerMillion: '1.60000000' }],
    [
      'anthropic:claude-sonnet-4-5',
      {
        inputPerMillion: '3.00000000',
        cacheWritePerMillion: '3.75000000',
        cacheWrite1hPerMillion: '6.00000000',
        cachedInputPerMillion: '0.30000000',
        outputPerMillion: '15.00000000',
      },
    ],
    [
      'anthropic:claude-haiku-4-5',
      {
        inputPerMillion: '1.00000000',
        cacheWritePerMillion: '1.25000000',
        cacheWrite1hPerMillion: '2.00000000',
        cachedInputPerMillion: '0.10000000',
        outputPerMillion: '5.00000000',
      },
    ],
    [
      'google:gemini-2.5-flash',
      {
        inputPerMillion: '0.30000000',
        cachedInputPerMillion: '0.03000000',
        outputPerMillion: '2.50000000',
        audioInputPerMillion: '1.00000000',
      },
    ],
    [
      'openai:gpt-audio',
      {
        inputPerMillion: '2.50000000',
        outputPerMillion: '10.00000000',
        audioInputPerMillion: '32.00000000',
        audioOutputPerMillion: '64.00000000',
      },
    ],
    [
      'openrouter:deepseek/deepseek-v4-pro',
      { inputPerMillion: '0.43500000', cachedInputPerMillion: '0.00362500', outputPerMillion: '0.87000000' },
    ],
  ])('%s', (key, expected) => {
    expect(pricesOf(key)).toEqual(expected);
  });

  it('picks the tier of the whole input: above (strictly) 200,000 tokens for claude-sonnet-4-5', () => {
    expect(pricesOf('anthropic:claude-sonnet-4-5', 200_000n).inputPerMillion).toBe('3.00000000');
    expect(pricesOf('anthropic:claude-sonnet-4-5', 200_001n)).toEqual({
      inputPerMillion: '6.00000000',
      cacheWritePerMillion: '7.50000000',
      cacheWrite1hPerMillion: '12.00000000',
      cachedInputPerMillion: '0.60000000',
      outputPerMillion: '22.50000000',
    });
  });

  it('picks the period in force at the call time: o3 before and after its 2025-06-10 price', () => {
    expect(pricesOf('openai:o3', 0n, new Date('2025-06-09T23:59:59Z')).inputPerMillion).toBe('10.00000000');
    expect(pricesOf('openai:o3', 0n, new Date('2025-06-10T00:00:00Z')).inputPerMillion).toBe('2.00000000');
  });

  it('picks time-of-day prices in UTC, the window wrapping nothing: deepseek-chat', () => {
    expect(pricesOf('deepseek:deepseek-chat', 0n, new Date('2026-01-01T00:29:59Z')).inputPerMillion).toBe('0.13500000');
    expect(pricesOf('deepseek:deepseek-chat', 0n, new Date('2026-01-01T00:30:00Z')).inputPerMillion).toBe('0.27000000');
    expect(pricesOf('deepseek:deepseek-chat', 0n, new Date('2026-01-01T16:30:00Z')).inputPerMillion).toBe('0.13500000');
  });

  it('resolves an exact alias of the data to its model, and nothing else', () => {
    expect(find('openai:gpt-4o-mini-2024-07-18').model).toBe('gpt-4o-mini');
    expect(currentPriceCatalog.find('openai', 'gpt-4o-mini-2099-01-01')).toBeUndefined();
    expect(currentPriceCatalog.find('openai', 'GPT-4O-MINI')).toBeUndefined();
    expect(currentPriceCatalog.find('nope', 'gpt-4o-mini')).toBeUndefined();
  });
});

describe('every converted price equals the package number exactly', () => {
  it('each catalog price, as a decimal, reads back as the very number genai-prices ships', () => {
    let checked = 0;
    let derived = 0;
    const keys: Record<string, keyof ModelPrice> = {
      input_mtok: 'inputPerMillion',
      cache_read_mtok: 'cachedInputPerMillion',
      cache_write_mtok: 'cacheWritePerMillion',
      cache_write_1h_mtok: 'cacheWrite1hPerMillion',
      output_mtok: 'outputPerMillion',
      input_audio_mtok: 'audioInputPerMillion',
      output_audio_mtok: 'audioOutputPerMillion',
      output_reasoning_mtok: 'reasoningPerMillion',
    };
    for (const [provider, providerIds] of Object.entries(catalogSources)) {
      // A model id of an earlier source provider (Azure's own list before OpenAI's) wins.
      const seen = new Set<string>();
      for (const providerId of providerIds) {
        for (const info of findProvider({ providerId })?.models ?? []) {
          if (seen.has(info.id)) continue;
          seen.add(info.id);
          const model = currentPriceCatalog.find(provider, info.id);
          if (!model || model.model !== info.id) continue;
          const periods = Array.isArray(info.prices) ? info.prices : [{ prices: info.prices }];
          periods.forEach((period, index) => {
            for (const [key, priceClass] of Object.entries(keys)) {
              const raw = period.prices[key];
              const converted = model.periods[index]?.prices[priceClass];
              if (raw === undefined) {
                // An embedding model's output, priced for its input alone, is 0; an Anthropic model's
                // one-hour cache write is 2× its input (Anthropic's rule); nothing else is added.
                if (priceClass === 'outputPerMillion' && /embed/i.test(info.id))
                  expect(formatUsd(converted?.base as Usd)).toBe('0.00000000');
                else if (priceClass === 'cacheWrite1hPerMillion' && provider === 'anthropic') {
                  const input = model.periods[index]?.prices.inputPerMillion;
                  const doubled = (amount: Usd | undefined) => Number(formatUsd(amount as Usd)) * 2;
                  expect(Number(formatUsd(converted?.base as Usd))).toBe(doubled(input?.base));
                  expect(converted?.tiers.map((tier) => [tier.above, Number(formatUsd(tier.price))])).toEqual(
                    input?.tiers.map((tier) => [tier.above, doubled(tier.price)]),
                  );
                  derived += 1;
                } else expect(converted).toBeUndefined();
                continue;
              }
              const rawBase = typeof raw === 'number' ? raw : raw.base;
              expect(Number(formatUsd(converted?.base as Usd))).toBe(rawBase);
              const rawTiers = typeof raw === 'number' ? [] : [...raw.tiers].sort((left, right) => left.start - right.start);
              expect(converted?.tiers.map((tier) => [tier.above, Number(formatUsd(tier.price))])).toEqual(
                rawTiers.map((tier) => [tier.start, tier.price]),
              );
              checked += 1;
            }
          });
        }
      }
    }
    expect(checked).toBeGreaterThan(2_000);
    // claude-2 and claude-v1 carry no one-hour price in the pinned data; every other Anthropic model does.
    expect(derived).toBe(2);
  });

  it("prices an Anthropic one-hour cache write at the data's own price, or 2× the input where the data has none", () => {
    // The data's own: claude-sonnet-4-5 at 6 (and 12 above 200k input tokens), claude-haiku-4-5 at 2.
    expect(pricesOf('anthropic:claude-sonnet-4-5').cacheWrite1hPerMillion).toBe('6.00000000');
    expect(pricesOf('anthropic:claude-sonnet-4-5', 200_001n).cacheWrite1hPerMillion).toBe('12.00000000');
    expect(pricesOf('anthropic:claude-3-5-haiku-latest').cacheWrite1hPerMillion).toBe('1.60000000');
    // Anthropic's rule where the data has none (claude-2 input 8 → 16); other providers get no such price.
    expect(pricesOf('anthropic:claude-2')).toMatchObject({ inputPerMillion: '8.00000000', cacheWrite1hPerMillion: '16.00000000' });
    expect(pricesOf('openai:gpt-4o-mini').cacheWrite1hPerMillion).toBeUndefined();
  });

  it('leaves out exactly the models whose prices have no 8-decimal value (the list changes only with the package)', () => {
    const inexact = currentPriceCatalog
      .excluded()
      .filter((entry) => entry.reason.includes('no exact 8-decimal value'))
      .map((entry) => entry.key);
    expect(inexact).toEqual([
      'openrouter:google/gemini-2.5-flash-image',
      'openrouter:google/gemini-2.5-flash-lite',
      'openrouter:google/gemini-3-flash-preview',
      'openrouter:google/gemini-3.1-flash-lite',
      'openrouter:google/gemini-3.5-flash',
      'openrouter:~google/gemini-flash-latest',
    ]);
    for (const key of inexact) expect(currentPriceCatalog.find('openrouter', key.slice('openrouter:'.length))).toBeUndefined();
  });

  it('leaves out models pricing a class Faucet does not meter, or without a token price, saying why', () => {
    const reasons = new Map(currentPriceCatalog.excluded().map((entry) => [entry.key, entry.reason]));
    expect(reasons.get('openai:gpt-image-1')).toBe('prices input_image_mtok, a class Faucet does not meter');
    expect(reasons.get('openai:whisper-1')).toBe('prices audio_hours, a class Faucet does not meter');
    // An embedding model priced for its input alone is admitted, its output at 0.
    expect(reasons.get('openai:text-embedding-3-small')).toBeUndefined();
    const embedding = currentPriceCatalog.find('openai', 'text-embedding-3-small');
    const prices = embedding?.periods[0]?.prices;
    expect([prices && formatUsd(prices.inputPerMillion.base), prices && formatUsd(prices.outputPerMillion.base)]).toEqual([
      '0.02000000',
      '0.00000000',
    ]);
    expect(currentPriceCatalog.find('openai', 'gpt-image-1')).toBeUndefined();
  });
});
