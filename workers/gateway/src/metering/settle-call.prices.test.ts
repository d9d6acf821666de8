/**
 * The gateway's own settlement books a call with what it was authorized with, the same values its
 * call record keeps for the stale-call sweeper (migration 0014): the feature's prices, the app's
 * channel share and the gateway's markup and fee. A change while the call is at the upstream applies
 * to later calls only.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatUsd } from '#shared/money/index.ts';
import { featurePricingFromRow, rateUsage, type RatingSettings } from '#shared/rating/index.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, newRequestId, settled, userMessage } from '../../../test/gateway-kit.ts';
import { api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  // This gateway's own rating settings, not the defaults.
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    DEEPSEEK_API_KEY: 'sk-deepseek-pool-test',
    PLATFORM_MARKUP_BPS: '3000',
    PLATFORM_FEE_BPS: '2500',
  });
  const stored = await call(api(), testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
});

afterEach(() => {
  vi.useRealTimers();
});

/** Sends a call whose upstream waits until `whileInFlight` has run, then answers 11 + 7 tokens. */
async function callChangingMeanwhile(
  body: Record<string, unknown>,
  whileInFlight: () => Promise<void>,
  beforeCall: () => void = () => undefined,
) {
  const session = await fundedSession(testEnv);
  beforeCall();
  let answer: (response: Response) => void = () => undefined;
  let reached: () => void = () => undefined;
  const upstreamReached = new Promise<void>((resolve) => (reached = resolve));
  const upstream = fakeUpstream(() => {
    reached();
    return new Promise<Response>((resolve) => (answer = resolve));
  });
  const requestId = newRequestId();
  const request = { model: 'openai:gpt-4o-mini', messages: [userMessage('hi')], ...body };
  const inFlight = chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, request, requestId);
  await upstreamReached;
  await whileInFlight();
  answer(jsonResponse(openAiCompletion('hello')));
  expect((await inFlight).status).toBe(200);
  return requestId;
}

/** The call's booking and what its call record keeps, once every call has settled. */
async function booked(requestId: string) {
  await settled(testEnv);
  const [row] = await sql<{
    route_mode: string;
    retail_usd: string;
    developer_revenue_usd: string;
    platform_share_usd: string;
    recorded: Record<string, unknown>;
  }>(
    testEnv,
    `select u.route_mode, u.retail_usd::text, u.developer_revenue_usd::text, u.platform_share_usd::text,
            jsonb_build_object('developer_price_per_mtok_usd', g.developer_price_per_mtok_usd::text, 'open_fee_usd', g.open_fee_usd::text,
              'developer_share_bps', g.developer_share_bps, 'platform_markup_bps', g.platform_markup_bps,
              'platform_fee_bps', g.platform_fee_bps) as recorded
       from usage_events u join gateway_calls g on g.id = u.call_id where u.client_request_id = $1`,
    [requestId],
  );
  return row!;
}

function split(
  routeMode: 'platform' | 'developer_key',
  developerPricePerMtokUsd: string | null,
  settings: RatingSettings,
  model = { provider: 'openai', model: 'gpt-4o-mini', pricedAt: new Date() },
) {
  const rated = rateUsage(
    { routeMode, ...model, inputTokens: 11, outputTokens: 7, estimated: false },
    featurePricingFromRow({ developerPricePerMtokUsd, openFeeUsd: null }),
    settings,
  );
  return {
    retail_usd: formatUsd(rated.retailUsd),
    developer_revenue_usd: formatUsd(rated.developerRevenueUsd),
    platform_share_usd: formatUsd(rated.platformShareUsd),
  };
}

const authorizedSettings = { platformMarkupBps: 3_000, channelShareBps: 5_000, platformFeeBps: 2_500 };

describe("the gateway's settlement", () => {
  it("platform: books at this gateway's markup and the channel share of authorization, as the call record keeps them", async () => {
    const requestId = await callChangingMeanwhile({ route_mode: 'platform' }, async () => {
      await sql(testEnv, `update apps set developer_share_bps = 9000 where public_app_id = $1`, [demoPublicAppId]);
    });
    await sql(testEnv, `update apps set developer_share_bps = 5000 where public_app_id = $1`, [demoPublicAppId]);
    expect(await booked(requestId)).toEqual({
      route_mode: 'platform',
      ...split('platform', null, authorizedSettings),
      recorded: {
        developer_price_per_mtok_usd: null,
        open_fee_usd: '0.00000000',
        developer_share_bps: 5000,
        platform_markup_bps: 3000,
        platform_fee_bps: 2500,
      },
    });
  });

  it("rates in the catalog's price period of the call's authorization: a call authorized before deepseek's off-peak hours and answered in them pays the standard price", async () => {
    const authorizedAt = new Date('2026-01-01T16:29:59Z');
    const answeredAt = new Date('2026-01-01T16:30:30Z');
    const requestId = await callChangingMeanwhile(
      { model: 'deepseek:deepseek-chat', route_mode: 'platform' },
      async () => {
        vi.setSystemTime(answeredAt);
      },
      () => {
        // Only the gateway's clock moves (the database keeps its own).
        vi.useFakeTimers({ toFake: ['Date'] });
        vi.setSystemTime(authorizedAt);
      },
    );
    vi.useRealTimers();
    const deepseek = (pricedAt: Date) => ({ provider: 'deepseek', model: 'deepseek-chat', pricedAt });
    expect(split('platform', null, authorizedSettings, deepseek(authorizedAt))).not.toEqual(
      split('platform', null, authorizedSettings, deepseek(answeredAt)),
    );
    expect(await booked(requestId)).toMatchObject(split('platform', null, authorizedSettings, deepseek(authorizedAt)));
  });

  it("developer_key: books at the feature price of authorization and this gateway's fee, as the call record keeps them", async () => {
    const features = `/v1/developer/apps/${demoPublicAppId}/features`;
    const created = await call(api(), testEnv, features, {
      json: {
        feature_key: 'settled_priced',
        name: 'Priced',
        default_model: 'openai:gpt-4o-mini',
        developer_price_per_mtok_usd: '2.00000000',
      },
      token: developerKey,
    });
    expect(created.status).toBe(201);
    const requestId = await callChangingMeanwhile({ feature: 'settled_priced', route_mode: 'developer_key' }, async () => {
      const changed = await call(api(), testEnv, `${features}/settled_priced`, {
        method: 'PATCH',
        json: { developer_price_per_mtok_usd: '9.00000000' },
        token: developerKey,
      });
      expect(changed.status).toBe(200);
    });
    expect(await booked(requestId)).toEqual({
      route_mode: 'developer_key',
      ...split('developer_key', '2.00000000', authorizedSettings),
      recorded: {
        developer_price_per_mtok_usd: '2.00000000',
        open_fee_usd: '0.00000000',
        developer_share_bps: 5000,
        platform_markup_bps: 3000,
        platform_fee_bps: 2500,
      },
    });
  });
});
