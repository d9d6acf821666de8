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
  input_cache_write_1h: string;
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
  surfaces: string[];
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
    expect(body.catalog_version).toBe('genai-prices@0.1.8+faucet.3');
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
    // A one-hour write is twice the input price (Anthropic's rule where the data has no price of its own).
    expect(sonnet?.pricing).toMatchObject({
      prompt: '3.60000000',
      completion: '18.00000000',
      input_cache_write: '4.50000000',
      input_cache_write_1h: '7.20000000',
    });
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
    expect(mini?.pricing.input_cache_write_1h).toBe(mini?.pricing.prompt);
  });

  it('applies the configured markup (PLATFORM_MARKUP_BPS), rounding up', async () => {
    const body = await listModels({ PLATFORM_MARKUP_BPS: '3333' });
    // 0.15 × 1.3333 = 0.199995; 0.60 × 1.3333 = 0.79998
    expect(body.data.find((model) => model.id === 'openai:gpt-4o-mini')?.pricing).toMatchObject({
      prompt: '0.19999500',
      completion: '0.79998000',
    });
  });

  it('says a chat model is served by the three chat surfaces, Responses and Messages included', async () => {
    const byId = new Map((await listModels()).data.map((model) => [model.id, model]));
    for (const id of ['openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5', 'google:gemini-2.5-flash', 'groq:llama-3.3-70b-versatile']) {
      expect(byId.get(id)?.surfaces, id).toEqual(['chat.completions', 'responses', 'messages']);
    }
  });

  it('says an embedding model is served by the embeddings surface only, with no chat features', async () => {
    const byId = new Map((await listModels()).data.map((model) => [model.id, model]));
    for (const id of [
      'openai:text-embedding-3-small',
      'azure:text-embedding-3-large',
      'google:gemini-embedding-001',
      'mistral:mistral-embed',
    ]) {
      expect(byId.get(id), id).toMatchObject({ surfaces: ['embeddings'], supported_features: [] });
    }
  });

  it('lists mock:echo on all four surfaces: the local stack chats and embeds with it', async () => {
    const echo = (await listModels()).data.find((model) => model.id === 'mock:echo');
    expect(echo?.surfaces).toEqual(['chat.completions', 'responses', 'messages', 'embeddings']);
    expect(echo?.supported_features).toEqual(expect.arrayContaining(['chat', 'streaming']));
  });

  it('names at least one surface for every model, and embeddings only for models of providers that serve them', async () => {
    const known = new Set(['chat.completions', 'responses', 'messages', 'embeddings']);
    const embeddingProviders = new Set(['openai', 'azure', 'google', 'mistral', 'together', 'fireworks', 'mock']);
    for (const model of (await listModels()).data) {
      expect(model.surfaces.length, model.id).toBeGreaterThan(0);
      expect(
        model.surfaces.every((surface) => known.has(surface)),
        model.id,
      ).toBe(true);
      if (model.surfaces.includes('embeddings')) expect(embeddingProviders.has(model.owned_by), model.id).toBe(true);
    }
  });

  it('documents surfaces in the OpenAPI schema of the model object', async () => {
    const response = await call(gatewayWith(), await gatewayTestEnv(), '/openapi.json');
    const document = (await response.json()) as {
      paths: Record<string, { get?: { responses: Record<string, { content: Record<string, { schema: unknown }> }> } }>;
    };
    const list = document.paths['/v1/models']?.get?.responses['200']?.content['application/json']?.schema as {
      properties: { data: { items: { required: string[]; properties: Record<string, { items?: { enum?: string[] } }> } } };
    };
    const model = list.properties.data.items;
    expect(model.required).toEqual(expect.arrayContaining(['id', 'object', 'created', 'owned_by', 'surfaces']));
    expect(model.properties.surfaces?.items?.enum).toEqual(['chat.completions', 'responses', 'messages', 'embeddings']);
  });

  it('lists only models of routable providers, and leaves out what the catalog cannot price', async () => {
    const ids = new Set((await listModels()).data.map((model) => model.id));
    expect(ids.has('openai:gpt-image-1')).toBe(false);
    expect(ids.has('openai:gpt-4o-mini-2024-07-18')).toBe(false);
    expect([...ids].every((id) => isProviderName(id.slice(0, id.indexOf(':'))))).toBe(true);
  });
});
