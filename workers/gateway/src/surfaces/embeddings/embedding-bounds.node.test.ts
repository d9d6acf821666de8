import { findProvider } from '@pydantic/genai-prices';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Env } from '#shared/env.ts';
import { formatUsd, parseWireAmount } from '#shared/money/index.ts';
import { catalogSourcesOf, PriceCatalog } from '#shared/rating/index.ts';
import { parseModel } from '../../routing/parse-model.ts';
import { countTokens } from '../../tokens/tokenize.ts';
import { embeddingHoldBounds, embeddingInputTokenBound, markerTokensPerTextInput } from './embedding-bounds.ts';

const env = {} as Env;
const flat = (amount: string) => ({ base: parseWireAmount(amount), tiers: [] });

/** A catalog pricing OpenAI's embedding models per input token only, at the package's prices. */
const embeddingCatalog = new PriceCatalog(
  'test-embeddings',
  catalogSourcesOf(
    [
      ['text-embedding-3-small', '0.02000000'],
      ['text-embedding-3-large', '0.13000000'],
    ].map(([model = '', input = '']) => ({
      provider: 'openai',
      model,
      name: model,
      contextWindow: null,
      periods: [{ constraint: null, prices: { inputPerMillion: flat(input), outputPerMillion: flat('0.00000000') } }],
    })),
  ),
);

describe('the input token bound', () => {
  it('counts token arrays exactly, one token per id', () => {
    expect(embeddingInputTokenBound({ kind: 'tokens', tokens: [[1, 2, 3]] })).toBe(3);
    expect(embeddingInputTokenBound({ kind: 'tokens', tokens: [[1], [2, 3], [4, 5, 6, 7]] })).toBe(7);
  });

  it('counts text by its UTF-8 bytes plus the markers of each input', () => {
    expect(embeddingInputTokenBound({ kind: 'text', texts: ['hello'] })).toBe(5 + markerTokensPerTextInput);
    // é is 2 bytes, 🙂 is 4.
    expect(embeddingInputTokenBound({ kind: 'text', texts: ['é', '🙂'] })).toBe(2 + 4 + 2 * markerTokensPerTextInput);
  });

  it('is never below the gateway tokenizer’s count of the same text', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 200, unit: 'grapheme' }), { minLength: 1, maxLength: 20 }), (texts) => {
        const counted = texts.reduce((total, text) => total + countTokens(text), 0);
        expect(embeddingInputTokenBound({ kind: 'text', texts })).toBeGreaterThanOrEqual(counted);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the hold of an embeddings call', () => {
  it('holds the input bound at the model’s input price on both routes, and no output', () => {
    // 1,000,000 tokens at $0.02 per million is $0.02 at cost; the platform adds its default 20% markup.
    const bounds = embeddingHoldBounds(
      env,
      parseModel('openai:text-embedding-3-small'),
      { kind: 'tokens', tokens: [Array.from({ length: 1_000_000 }, () => 1)] },
      embeddingCatalog,
    );
    expect(bounds).toMatchObject({ worstCaseTokens: 1_000_000, worstCaseInputTokens: 1_000_000, worstCaseOutputTokens: 0 });
    expect(bounds.developerKeyAtCost && formatUsd(bounds.developerKeyAtCost)).toBe('0.02000000');
    expect(bounds.platform && formatUsd(bounds.platform)).toBe('0.02400000');
  });

  it('rounds a cost below a unit up, never to zero', () => {
    const bounds = embeddingHoldBounds(
      env,
      parseModel('openai:text-embedding-3-small'),
      { kind: 'tokens', tokens: [[1]] },
      embeddingCatalog,
    );
    expect(bounds.developerKeyAtCost && formatUsd(bounds.developerKeyAtCost)).toBe('0.00000002');
  });

  it('follows the platform markup of the environment', () => {
    const bounds = embeddingHoldBounds(
      { PLATFORM_MARKUP_BPS: '5000' } as unknown as Env,
      parseModel('openai:text-embedding-3-large'),
      { kind: 'text', texts: ['a'.repeat(999_998)] },
      embeddingCatalog,
    );
    expect(bounds.worstCaseInputTokens).toBe(1_000_000);
    expect(bounds.platform && formatUsd(bounds.platform)).toBe('0.19500000');
  });

  it('prices mistral-embed from the current catalog', () => {
    const bounds = embeddingHoldBounds(env, parseModel('mistral:mistral-embed'), { kind: 'text', texts: ['a'.repeat(999_998)] });
    expect(bounds.developerKeyAtCost && formatUsd(bounds.developerKeyAtCost)).toBe('0.10000000');
  });

  it('holds nothing in money for a model the catalog does not price', () => {
    const bounds = embeddingHoldBounds(env, parseModel('together:BAAI/bge-base-en-v1.5'), { kind: 'text', texts: ['hi'] });
    expect(bounds).toMatchObject({ platform: null, developerKeyAtCost: null, worstCaseInputTokens: 2 + markerTokensPerTextInput });
  });
});

describe('the price data of embedding models', () => {
  // What the hold and the rating of each embedding model rest on: the package's input price (the
  // catalog converts it; genai-prices-catalog.ts decides which models it takes).
  const embeddingModels: Array<[provider: string, model: string, inputPerMillion: number]> = [
    ['openai', 'text-embedding-3-small', 0.02],
    ['openai', 'text-embedding-3-large', 0.13],
    ['openai', 'text-embedding-ada-002', 0.1],
    ['azure', 'text-embedding-3-small', 0.02],
    ['azure', 'text-embedding-3-large', 0.13],
    ['mistral', 'mistral-embed', 0.1],
    ['google', 'gemini-embedding-001', 0.15],
  ];

  it.each(embeddingModels)('%s:%s has an input price in the installed package', (provider, model, inputPerMillion) => {
    const data = findProvider({ providerId: provider });
    const prices = data?.models.find((entry) => entry.id === model)?.prices;
    expect(prices).toMatchObject({ input_mtok: inputPerMillion });
  });
});
