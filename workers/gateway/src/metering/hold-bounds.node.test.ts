import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Env } from '#shared/env.ts';
import { formatUsd, type Usd } from '#shared/money/index.ts';
import { isProviderName } from '#shared/providers/provider-catalog.ts';
import { currentPriceCatalog, RatingError, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { parseModel, type ModelReference } from '../routing/parse-model.ts';
import { holdBounds } from './hold-bounds.ts';

/** The retail price of the worst-case tokens on a route, rated on its own (what each bound was before they shared one rating). */
function retailOn(env: Env, routeMode: 'platform' | 'developer_key', reference: ModelReference, inputTokens: number, outputTokens: number) {
  try {
    const usage = { routeMode, provider: reference.provider, model: reference.model, inputTokens, outputTokens, estimated: true };
    return rateUsage(usage, {}, ratingSettingsFor(env, null)).retailUsd;
  } catch (error) {
    if (error instanceof RatingError && error.reason === 'unknown_model') return null;
    throw error;
  }
}

const printed = (amount: Usd | null) => amount && formatUsd(amount);
const routable = currentPriceCatalog.models(isProviderName).map(({ provider, model }) => `${provider}:${model}`);

describe('hold bounds', () => {
  it('hold the platform price and the developer_key price at cost that each route rated alone would charge', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...routable, 'openai:gpt-9', 'mock:echo'),
        fc.string({ maxLength: 300 }),
        fc.option(fc.nat({ max: 2_000_000 }), { nil: undefined }),
        fc.record({ PLATFORM_MARKUP_BPS: fc.nat({ max: 100_000 }).map(String), PLATFORM_FEE_BPS: fc.nat({ max: 10_000 }).map(String) }),
        (name, text, maxTokens, vars) => {
          const env = vars as unknown as Env;
          const reference = parseModel(name);
          const request: ChatRequest = { model: reference.model, messages: [{ role: 'user', content: text }], max_tokens: maxTokens };
          const bounds = holdBounds(env, reference, request);
          const { worstCaseInputTokens: input, worstCaseOutputTokens: output } = bounds;
          expect(printed(bounds.platform)).toEqual(printed(retailOn(env, 'platform', reference, input, output)));
          expect(printed(bounds.developerKeyAtCost)).toEqual(printed(retailOn(env, 'developer_key', reference, input, output)));
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('hold nothing in money for a model the catalog does not price', () => {
    const request: ChatRequest = { model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 };
    const bounds = holdBounds({} as Env, parseModel('openai:gpt-9'), request);
    expect(bounds).toMatchObject({ platform: null, developerKeyAtCost: null, worstCaseOutputTokens: 10 });
  });
});
