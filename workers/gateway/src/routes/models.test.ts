import { describe, expect, it } from 'vitest';
import { isProviderName } from '#shared/providers/provider-catalog.ts';
import { call } from '../../../test/harness.ts';
import { gatewayTestEnv, gatewayWith } from '../../../test/gateway-kit.ts';

interface Pricing {
  currency: string;
  unit: string;
  prompt: string;
  completion: string;
  input_cache_read: string;
  input_cache_write: string;
}

interface Listed {
  id: string;
  object: string;
  owned_by: string;
  name: string;
  context_length: number | null;
  max_completion_tokens: number;
  pricing: Pricing;
  pricing_tiers: Array<Pricing & { above_input_tokens: number }>;
  supported_features: string[];
}

async function listModels(overrides: Parameters<typeof gatewayTestEnv>[0] = {}) {
  const response = await call(gatewayWith(), await gatewayTestEnv(overrides), '/v1/models');
  expect(response.status).toBe(200);
  return (await response.json()) as { object: string; catalog_version: string; data: Listed[] };
}

describe('GET /v1/models', () => {
  it('lists routable models in OpenAI list shape with retail prices per million after the 20 % default markup', async () => {
    const body = await listModels();
    expect(body.object).toBe('list');
    expect(body.catalog_version).toBe('genai-prices@0.1.8+faucet.1');
    const byId = new Map(body.data.map((model) => [model.id, model]));
    expect(byId.get('openai:gpt-4o-mini')).toMatchObject({
      object: 'model',
      owned_by: 'openai',
      name: 'gpt 4o mini',
      context_length: 128_000,
      max_completion_tokens: 16_384,
      // 0.15 / 0.60 / 0.075 × 1.2
      pricing: { currency: 'USD', unit: '1M tokens', prompt: '0.18000000', completion: '0.72000000', input_cache_read: '0.09000000' },
      pricing_tiers: [],
      supported_features: ['chat', 'streaming', 'image_input'],
    });
    expect(byId.get('mock:echo')?.pricing).toMatchObject({ prompt: '1.20000000', completion: '2.40000000' });
    expect(body.data.every((model) => /^[a-z]+:.+$/.test(model.id))).toBe(true);
  });

  it('shows tiered prices, and a class without its own price at its whole one', async () => {
    const sonnet = (await listModels()).data.find((model) => model.id === 'anthropic:claude-sonnet-4-5');
    expect(sonnet?.pricing).toMatchObject({ prompt: '3.60000000', completion: '18.00000000', input_cache_write: '4.50000000' });
    expect(sonnet?.pricing_tiers).toEqual([
      expect.objectContaining({
        above_input_tokens: 200_000,
        prompt: '7.20000000',
        completion: '27.00000000',
        input_cache_read: '0.72000000',
      }),
    ]);
    const mini = (await listModels()).data.find((model) => model.id === 'openai:gpt-4o-mini');
    expect(mini?.pricing.input_cache_write).toBe(mini?.pricing.prompt);
  });

  it('applies the configured markup (PLATFORM_MARKUP_BPS), rounding up', async () => {
    const body = await listModels({ PLATFORM_MARKUP_BPS: '3333' });
    // 0.15 × 1.3333 = 0.199995; 0.60 × 1.3333 = 0.79998
    expect(body.data.find((model) => model.id === 'openai:gpt-4o-mini')?.pricing).toMatchObject({
      prompt: '0.19999500',
      completion: '0.79998000',
    });
  });

  it('lists only models of routable providers, and leaves out what the catalog cannot price', async () => {
    const ids = new Set((await listModels()).data.map((model) => model.id));
    expect(ids.has('openai:gpt-image-1')).toBe(false);
    expect(ids.has('openai:gpt-4o-mini-2024-07-18')).toBe(false);
    expect([...ids].every((id) => isProviderName(id.slice(0, id.indexOf(':'))))).toBe(true);
  });
});
