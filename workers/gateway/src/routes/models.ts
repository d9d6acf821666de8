/**
 * `GET /v1/models`: every routable model (a catalog model of a provider the gateway routes to), in
 * OpenAI's list shape with OpenRouter-style details: its retail price per million tokens on the
 * platform route (catalog price + platform markup, rounded up as a call is), context window, output
 * cap, what the gateway accepts for it and which of its APIs serve it (`surfaces`: model-surfaces.ts,
 * the predicate the embeddings route refuses by). Public: prices are not secrets.
 */
import { z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { addUsd, applyBasisPoints, formatUsd, type Usd } from '#shared/money/index.ts';
import { imageTokenBound, isProviderName } from '#shared/providers/provider-catalog.ts';
import { currentPriceCatalog, pricesAt, ratingSettingsFor, type CatalogModel, type PriceClass } from '#shared/rating/index.ts';
import { modelLimits, outputTokenCap } from '#shared/rating/model-limits.ts';
import { modelSurfaces, surfacesOf } from '../surfaces/model-surfaces.ts';

const perMillion = z.string().regex(/^\d+\.\d{8}$/);

const pricingSchema = z.object({
  currency: z.literal('USD'),
  unit: z.literal('1M tokens'),
  prompt: perMillion,
  completion: perMillion,
  input_cache_read: perMillion,
  input_cache_write: perMillion,
  /** A one-hour prompt-cache write (Anthropic's `ttl: "1h"`); `input_cache_write` is the five-minute one. */
  input_cache_write_1h: perMillion,
  input_audio: perMillion,
  output_audio: perMillion,
  internal_reasoning: perMillion,
});

export const modelListSchema = z.object({
  object: z.literal('list'),
  /** The catalog version calls are rated with now. */
  catalog_version: z.string(),
  data: z.array(
    z.object({
      id: z.string().openapi({ example: 'openai:gpt-4o-mini' }),
      object: z.literal('model'),
      created: z.number(),
      owned_by: z.string(),
      name: z.string(),
      context_length: z.number().int().nullable(),
      /** What a call without `max_tokens` is held for (and sent, where the provider requires one). */
      max_completion_tokens: z.number().int(),
      /** Retail per million tokens for a call's input at the base tier. */
      pricing: pricingSchema,
      /** Above `above_input_tokens` input tokens in one call, every token of it is priced at the tier. */
      pricing_tiers: z.array(pricingSchema.extend({ above_input_tokens: z.number().int() })),
      /** What a chat call may use; empty for a model that serves no chat surface. */
      supported_features: z.array(z.enum(['chat', 'streaming', 'image_input'])),
      surfaces: z.array(z.enum(modelSurfaces)).openapi({
        description:
          'The APIs that serve the model, named after their paths: `chat.completions` (POST /v1/chat/completions), `responses` and `messages` (with `messages/count_tokens`) for a chat model; `embeddings` for an embedding model',
        example: ['chat.completions', 'responses', 'messages'],
      }),
    }),
  ),
});

type Pricing = z.infer<typeof pricingSchema>;

const classes: Array<[Exclude<keyof Pricing, 'currency' | 'unit'>, ...PriceClass[]]> = [
  // [field, its class, then the classes it falls back to, as rating does (rate-usage.ts)]
  ['prompt', 'inputPerMillion'],
  ['completion', 'outputPerMillion'],
  ['input_cache_read', 'cachedInputPerMillion', 'inputPerMillion'],
  ['input_cache_write', 'cacheWritePerMillion', 'inputPerMillion'],
  ['input_cache_write_1h', 'cacheWrite1hPerMillion', 'cacheWritePerMillion', 'inputPerMillion'],
  ['input_audio', 'audioInputPerMillion', 'inputPerMillion'],
  ['output_audio', 'audioOutputPerMillion', 'outputPerMillion'],
  ['internal_reasoning', 'reasoningPerMillion', 'outputPerMillion'],
];

function describe(model: CatalogModel, at: Date, markupBps: number) {
  const prices = pricesAt(model, at);
  const retail = (amount: Usd) => formatUsd(addUsd(amount, applyBasisPoints(amount, markupBps, 'up')));
  const pricingAbove = (inputTokens: number): Pricing => {
    const rates = Object.fromEntries(
      classes.map(([field, ...chain]) => {
        const tiered = chain.map((priceClass) => prices[priceClass]).find((price) => price !== undefined);
        let rate = tiered?.base;
        for (const tier of tiered?.tiers ?? []) if (inputTokens > tier.above) rate = tier.price;
        return [field, rate ? retail(rate) : '0.00000000'];
      }),
    ) as Omit<Pricing, 'currency' | 'unit'>;
    return { ...rates, currency: 'USD', unit: '1M tokens' };
  };
  const tierStarts = [...new Set(Object.values(prices).flatMap((price) => price?.tiers.map((tier) => tier.above) ?? []))].sort(
    (left, right) => left - right,
  );
  const surfaces = surfacesOf(model.provider, model.model);
  const features: Array<'chat' | 'streaming' | 'image_input'> = [];
  if (surfaces.includes('chat.completions')) {
    features.push('chat', 'streaming');
    if (imageTokenBound(model.provider, model.model) !== null) features.push('image_input');
  }
  return {
    id: `${model.provider}:${model.model}`,
    object: 'model' as const,
    created: 0,
    owned_by: model.provider,
    name: model.name,
    context_length: modelLimits(model.provider, model.model).contextWindow,
    max_completion_tokens: outputTokenCap(model.provider, model.model),
    pricing: pricingAbove(0),
    pricing_tiers: tierStarts.map((above) => ({ above_input_tokens: above, ...pricingAbove(above + 1) })),
    supported_features: features,
    surfaces,
  };
}

export function registerModels(app: ServiceApp): void {
  app.get('/v1/models', (c) => {
    const { platformMarkupBps } = ratingSettingsFor(c.env, null);
    const now = new Date();
    const catalog = currentPriceCatalog;
    const body: z.infer<typeof modelListSchema> = {
      object: 'list',
      catalog_version: catalog.version,
      data: catalog.models(isProviderName).map((model) => describe(model, now, platformMarkupBps)),
    };
    return c.json(body);
  });
}
