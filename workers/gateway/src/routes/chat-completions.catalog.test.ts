/**
 * The price catalog is a gateway dependency (`GatewayDependencies.priceCatalog`, the seam the
 * benchmark compares catalogs through): a gateway given another catalog holds, rates and books every
 * call with it, and a model that catalog does not price is refused on the platform route before
 * anything is held or sent. Production gateways get the current catalog.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseWireAmount, usdFromUnits } from '#shared/money/index.ts';
import { catalogSourcesOf, currentPriceCatalog, PriceCatalog } from '#shared/rating/index.ts';
import { defaultGatewayDependencies } from '../gateway-dependencies.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  settled,
  userMessage,
} from '../../../test/gateway-kit.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', PLATFORM_MARKUP_BPS: '2000' });
});

const flat = (amount: string) => ({ base: parseWireAmount(amount), tiers: [] });
/** gpt-4o-mini alone, at 10 / 20 USD per million tokens (the current catalog has 0.15 / 0.60). */
const testCatalog = new PriceCatalog(
  'test-catalog@1',
  catalogSourcesOf([
    {
      provider: 'openai',
      model: 'gpt-4o-mini',
      name: 'GPT-4o mini (test prices)',
      contextWindow: 128_000,
      periods: [{ constraint: null, prices: { inputPerMillion: flat('10.00000000'), outputPerMillion: flat('20.00000000') } }],
    },
  ]),
);

describe('the price catalog a gateway is given', () => {
  it('production gateways rate with the current catalog', () => {
    expect(defaultGatewayDependencies.priceCatalog).toBe(currentPriceCatalog);
  });

  it('holds, rates and books a call with the injected catalog, its version and prices recorded', async () => {
    const session = await fundedSession(testEnv);
    let held = '';
    const upstream = fakeUpstream(async () => {
      held = formatUsd(await heldForCalls(testEnv, session));
      return jsonResponse(openAiCompletion('Paris.', { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }));
    });
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch, priceCatalog: testCatalog }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', route_mode: 'platform', max_tokens: 100, messages: [userMessage('hi')] },
      requestId,
    );
    expect(response.status).toBe(200);
    await settled(testEnv);
    const [bound] = await sql<{ bound_input_tokens: number; bound_output_tokens: number }>(
      testEnv,
      'select bound_input_tokens, bound_output_tokens from gateway_calls where client_request_id = $1',
      [requestId],
    );
    // The hold: the worst case at 10 / 20 USD per million (in 1e-8 USD: tokens × price × 100) plus the 20 % markup, rounded up.
    const upstreamUnits = (BigInt(bound!.bound_input_tokens) * 10n + BigInt(bound!.bound_output_tokens) * 20n) * 100n;
    const holdUnits = upstreamUnits + (upstreamUnits * 2_000n + 9_999n) / 10_000n;
    expect(held).toBe(formatUsd(usdFromUnits(holdUnits)));
    expect(
      await sql(
        testEnv,
        `select price_catalog_version, input_price_per_mtok_usd::text, output_price_per_mtok_usd::text, upstream_cost_usd::text,
                retail_usd::text
           from usage_events where client_request_id = $1`,
        [requestId],
      ),
    ).toEqual([
      {
        price_catalog_version: 'test-catalog@1',
        input_price_per_mtok_usd: '10.00000000',
        output_price_per_mtok_usd: '20.00000000',
        // 11 × 10 + 7 × 20 = 250 USD per million tokens; retail 20 % above.
        upstream_cost_usd: '0.00025000',
        retail_usd: '0.00030000',
      },
    ]);
  });

  it('a model the injected catalog does not price is refused on the platform route, nothing sent', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('no')));
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch, priceCatalog: testCatalog }), testEnv, session.token, {
      model: 'openai:gpt-4o',
      route_mode: 'platform',
      messages: [userMessage('hi')],
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    expect(upstream.requests).toEqual([]);
  });
});
