/**
 * A call the gateway never settled (its isolate ended mid-call) is booked at its bound by the wallet
 * object that authorized it, at the prices it was authorized with: a feature price or open fee raised
 * afterwards through the API, a platform markup or fee of a later deploy, an app's channel share
 * changed since, or the catalog's price period of the sweep never reprices it — so it never books
 * above what it reserved, and its booking's metadata names the prices it used.
 */
import { createExecutionContext, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatUsd } from '#shared/money/index.ts';
import { featurePricingFromRow, rateUsage, type RatingSettings } from '#shared/rating/index.ts';
import { fakeUpstream } from '../../../test/fake-upstream.ts';
import { fundedSession, gatewayTestEnv, gatewayWith, newRequestId, settled, userMessage, wallet } from '../../../test/gateway-kit.ts';
import { api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';
import { callsKeptBy, keptCall, sweepCallNow, walletObjectOf } from '../../../test/wallet-kit.ts';
import { type StoredCall, usdString } from './lease-book.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    DEEPSEEK_API_KEY: 'sk-deepseek-pool-test',
    ANTHROPIC_API_KEY: 'sk-ant-pool-test',
    CALL_SETTLE_GRACE_SECONDS: '1',
  });
  const stored = await call(api(), testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
});

const features = `/v1/developer/apps/${demoPublicAppId}/features`;

async function addFeature(featureKey: string, prices: Record<string, string>) {
  const created = await call(api(), testEnv, features, {
    json: { feature_key: featureKey, name: featureKey, default_model: 'openai:gpt-4o-mini', ...prices },
    token: developerKey,
  });
  expect(created.status).toBe(201);
}

async function patchFeature(featureKey: string, prices: Record<string, string>) {
  const changed = await call(api(), testEnv, `${features}/${featureKey}`, { method: 'PATCH', json: prices, token: developerKey });
  expect(changed.status).toBe(200);
}

/**
 * Starts a call whose upstream never answers and whose isolate is then lost (its promise is never
 * awaited), through a gateway with `env`; hands back the call its wallet object keeps once the
 * upstream has the request, and what it reserved and bounded.
 */
async function callLeftInFlight(token: string, body: Record<string, unknown>, env: TestEnv = testEnv) {
  const upstream = fakeUpstream(() => new Promise<Response>(() => undefined));
  const requestId = newRequestId();
  void Promise.resolve(
    gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', messages: [userMessage('write a long story')], max_tokens: 400, ...body }),
      }),
      env,
      createExecutionContext(),
    ),
  ).catch(() => undefined);
  await expect.poll(() => upstream.requests.length).toBe(1);
  const [callId, ...others] = await callsKeptBy(token);
  expect(others).toEqual([]);
  const kept = await keptCall(token, callId!);
  const authorized = {
    route_mode: kept.record.route_mode as string,
    hold: usdString(kept.reservedUnits),
    input: kept.record.bound_input_tokens as number,
    output: kept.record.bound_output_tokens as number,
  };
  return { requestId, callId: callId!, kept, authorized };
}

/** Its deadline and grace pass: the wallet object books it at its bound, and the ledger has it. */
async function sweep(token: string, callId: string) {
  await sweepCallNow(token, callId);
  await settled(testEnv);
}

/** What the booking of a call charged and split, and the metadata of its ledger transaction. */
async function booking(requestId: string) {
  const rows = await sql<{
    estimated: boolean;
    retail_usd: string;
    developer_revenue_usd: string;
    platform_share_usd: string;
    receivable_usd: string;
    metadata: { feature_pricing?: Record<string, unknown> };
  }>(
    testEnv,
    `select u.estimated, u.retail_usd::text, u.developer_revenue_usd::text, u.platform_share_usd::text, u.receivable_usd::text,
            t.metadata
       from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The split the worst-case tokens of a call get at the given prices and settings. */
function expectedSplit(
  routeMode: 'platform' | 'developer_key' | 'byok',
  tokens: { input: number; output: number },
  prices: { developerPricePerMtokUsd: string | null; openFeeUsd: string | null },
  settings: RatingSettings,
) {
  const rated = rateUsage(
    { routeMode, provider: 'openai', model: 'gpt-4o-mini', inputTokens: tokens.input, outputTokens: tokens.output, estimated: true },
    featurePricingFromRow(prices),
    settings,
  );
  return {
    retail_usd: formatUsd(rated.retailUsd),
    developer_revenue_usd: formatUsd(rated.developerRevenueUsd),
    platform_share_usd: formatUsd(rated.platformShareUsd),
  };
}

describe('a call never settled is booked by its wallet object at the prices it was authorized with', () => {
  it('developer_key: a developer price raised through the API after authorization is not applied, nor a later deploy’s fee', async () => {
    await addFeature('swept_priced', { developer_price_per_mtok_usd: '2.00000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    // The authorizing gateway's fee (1500) differs from the one the object's worker runs with (1000): a deploy between.
    const { requestId, callId, kept, authorized } = await callLeftInFlight(
      session.token,
      { feature: 'swept_priced', route_mode: 'developer_key' },
      { ...testEnv, PLATFORM_FEE_BPS: '1500' },
    );
    expect(authorized.route_mode).toBe('developer_key');
    await patchFeature('swept_priced', { developer_price_per_mtok_usd: '40.00000000' });
    // The call as kept names what it was authorized with.
    expect(kept.rating).toMatchObject({
      developerPricePerMtokUsd: '2.00000000',
      openFeeUsd: '0.00000000',
      developerShareBps: 5000,
      platformMarkupBps: 2000,
      platformFeeBps: 1500,
    });

    await sweep(session.token, callId);

    const booked = await booking(requestId);
    const old = { developerPricePerMtokUsd: '2.00000000', openFeeUsd: '0.00000000' };
    expect(booked).toMatchObject({
      estimated: true,
      receivable_usd: '0.00000000',
      ...expectedSplit('developer_key', authorized, old, { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_500 }),
    });
    // At the old price the worst case is exactly what was reserved: never above it.
    expect(booked.retail_usd).toBe(authorized.hold);
    expect(booked.metadata.feature_pricing).toEqual({
      feature_key: 'swept_priced',
      developer_price_per_mtok_usd: '2.00000000',
      open_fee_usd: '0.00000000',
    });
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });
  });

  it('byok: an open fee raised through the API after authorization is not applied', async () => {
    await addFeature('swept_fee', { open_fee_usd: '0.01000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const userKey = await call(api(), testEnv, '/v1/user/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey() },
      token: session.token,
    });
    expect(userKey.status).toBe(201);
    const { requestId, callId, authorized } = await callLeftInFlight(session.token, { feature: 'swept_fee', route_mode: 'byok' });
    expect(authorized).toMatchObject({ route_mode: 'byok', hold: '0.01000000' });
    await patchFeature('swept_fee', { open_fee_usd: '0.50000000' });

    await sweep(session.token, callId);
    expect(await booking(requestId)).toMatchObject({
      estimated: true,
      retail_usd: '0.01000000',
      developer_revenue_usd: '0.00900000',
      platform_share_usd: '0.00100000',
      receivable_usd: '0.00000000',
      metadata: { feature_pricing: { feature_key: 'swept_fee', developer_price_per_mtok_usd: null, open_fee_usd: '0.01000000' } },
    });
    await settled(testEnv);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '0.99000000', held: '0.00000000', available: '0.99000000' });
  });

  it("platform: the markup the gateway held with and the app's channel share at authorization, not those of the sweep", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    // The authorizing gateway's markup (3000) differs from the one the object's worker runs with (2000).
    const { requestId, callId, authorized } = await callLeftInFlight(
      session.token,
      { route_mode: 'platform' },
      { ...testEnv, PLATFORM_MARKUP_BPS: '3000' },
    );
    expect(authorized.route_mode).toBe('platform');
    await sql(testEnv, `update apps set developer_share_bps = 9000 where public_app_id = $1`, [demoPublicAppId]);
    try {
      await sweep(session.token, callId);
    } finally {
      await sql(testEnv, `update apps set developer_share_bps = 5000 where public_app_id = $1`, [demoPublicAppId]);
    }
    const booked = await booking(requestId);
    expect(booked).toMatchObject({
      receivable_usd: '0.00000000',
      ...expectedSplit(
        'platform',
        authorized,
        { developerPricePerMtokUsd: null, openFeeUsd: null },
        { platformMarkupBps: 3_000, channelShareBps: 5_000, platformFeeBps: 1_000 },
      ),
    });
    expect(booked.retail_usd).toBe(authorized.hold);
  });

  it("rates in the catalog's price period of the call's authorization, not the sweep's (deepseek's off-peak hours)", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const { requestId, callId, authorized } = await callLeftInFlight(session.token, {
      model: 'deepseek:deepseek-chat',
      route_mode: 'platform',
    });
    expect(authorized.route_mode).toBe('platform');
    // deepseek-chat costs half from 16:30 to 00:30 UTC: the call was authorized yesterday, in the other period than now.
    const now = new Date();
    const minutes = now.getUTCHours() * 60 + now.getUTCMinutes();
    const offPeakNow = minutes >= 16 * 60 + 30 || minutes < 30;
    const authorizedAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1, offPeakNow ? 12 : 20));
    await runInDurableObject(walletObjectOf(session.token), async (_instance, state) => {
      const stored = (await state.storage.get<StoredCall>(`call:${callId}`)) as StoredCall;
      await state.storage.put(`call:${callId}`, {
        ...stored,
        rating: { ...stored.rating, authorizedAt: authorizedAt.getTime() },
        record: { ...stored.record, created_at: authorizedAt.toISOString() },
      });
    });

    await sweep(session.token, callId);
    const [row] = await sql<{ upstream_cost_usd: string }>(
      testEnv,
      'select upstream_cost_usd::text from usage_events where client_request_id = $1',
      [requestId],
    );
    const costAt = (pricedAt: Date) =>
      formatUsd(
        rateUsage({
          routeMode: 'platform',
          provider: 'deepseek',
          model: 'deepseek-chat',
          inputTokens: authorized.input,
          outputTokens: authorized.output,
          estimated: true,
          pricedAt,
        }).upstreamCostUsd,
      );
    expect(costAt(authorizedAt)).not.toBe(costAt(now));
    expect(row!.upstream_cost_usd).toBe(costAt(authorizedAt));
  });

  it('books the input of a prompt with a one-hour cache breakpoint at the one-hour write price its hold was sized at', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const cached = { type: 'text', text: 'A long shared context. '.repeat(200), cache_control: { type: 'ephemeral', ttl: '1h' } };
    const { requestId, callId, kept, authorized } = await callLeftInFlight(session.token, {
      model: 'anthropic:claude-sonnet-4-5',
      route_mode: 'platform',
      messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Summarize it.' }] }],
    });
    expect(kept.record.bound_cache_lifetime).toBe('1h');
    expect(kept.rating.cacheLifetime).toBe('1h');

    await sweep(session.token, callId);
    const [row] = await sql<{ retail_usd: string; input_tokens: number; cache_write_1h_tokens: number; lifetime: string }>(
      testEnv,
      `select u.retail_usd::text, u.input_tokens, u.cache_write_1h_tokens, g.bound_cache_lifetime as lifetime
         from usage_events u join gateway_calls g on g.money_key = u.request_id where u.client_request_id = $1`,
      [requestId],
    );
    // All of the input at the one-hour write price: exactly what was held, never the plain input price below it.
    expect(row).toMatchObject({ input_tokens: authorized.input, cache_write_1h_tokens: authorized.input, lifetime: '1h' });
    expect(row?.retail_usd).toBe(authorized.hold);

    // At the plain input price it would have booked less than the provider may have charged
    // (the stale-call sweeper books by the same rule from the column: sweep-stale-calls.test.ts).
    const plainInput = rateUsage({
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: authorized.input,
      outputTokens: authorized.output,
      estimated: true,
    }).retailUsd;
    expect(formatUsd(plainInput)).not.toBe(authorized.hold);
  });
});
