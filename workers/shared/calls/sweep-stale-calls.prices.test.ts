/**
 * The sweeper books a call the gateway never settled at the prices the call was authorized with
 *: a feature price raised afterwards through the API, a platform markup or fee changed by a
 * deploy, or an app's channel share changed since, never reprices it — so it never books above its
 * hold, and its booking's metadata names the prices it used. Rows authorized before migration 0014
 * (no frozen prices) are booked at the prices read when swept, as before.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../test/fake-upstream.ts';
import { fundedSession, newRequestId, userMessage, wallet, gatewayWith } from '../../test/gateway-kit.ts';
import { api, call, createDatabase, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../test/harness.ts';
import { fakeOpenAiKey } from '../../test/provider-keys-kit.ts';
import type { Env } from '../env.ts';
import { formatUsd } from '../money/index.ts';
import { featurePricingFromRow, rateUsage, type RatingSettings } from '../rating/index.ts';
import { sweepStaleCalls } from './sweep-stale-calls.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    DEEPSEEK_API_KEY: 'sk-deepseek-pool-test',
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
 * awaited); hands back its request id once the upstream has it, and a way to answer late.
 */
async function callLeftInFlight(token: string, body: Record<string, unknown>) {
  let answer: (response: Response) => void = () => undefined;
  const upstream = fakeUpstream(() => new Promise<Response>((resolve) => (answer = resolve)));
  const requestId = newRequestId();
  const pending = gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
    new Request('http://faucet.test/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
      body: JSON.stringify({ model: 'openai:gpt-4o-mini', messages: [userMessage('write a long story')], max_tokens: 400, ...body }),
    }),
    testEnv,
    createExecutionContext(),
  );
  await expect.poll(() => upstream.requests.length).toBe(1);
  const [authorized] = await sql<{ route_mode: string; hold: string; input: number; output: number }>(
    testEnv,
    `select g.route_mode, h.amount::numeric(20, 8)::text as hold, g.bound_input_tokens as input, g.bound_output_tokens as output
       from gateway_calls g join balance_holds h on h.request_id = g.money_key where g.client_request_id = $1`,
    [requestId],
  );
  const answerLate = async () => {
    answer(jsonResponse(openAiCompletion('late')));
    await Promise.resolve(pending).catch(() => undefined);
  };
  return { requestId, authorized: authorized!, answerLate };
}

const recordedPrices = `select developer_price_per_mtok_usd::text, open_fee_usd::text, developer_share_bps, platform_markup_bps, platform_fee_bps
  from gateway_calls`;

async function makeStale(requestId: string) {
  await sql(testEnv, `update gateway_calls set deadline_at = now() - interval '1 hour' where client_request_id = $1`, [requestId]);
}

async function sweep(env: Partial<Env> = {}) {
  const { db, pool } = createDatabase(testEnv);
  try {
    return await sweepStaleCalls(db, { ...testEnv, ...env });
  } finally {
    await pool.end();
  }
}

/** What the booking of a call charged and split, and the metadata of its ledger transaction. */
async function booking(requestId: string) {
  const rows = await sql<{
    estimated: boolean;
    retail_usd: string;
    developer_revenue_usd: string;
    platform_share_usd: string;
    receivable_usd: string;
    metadata: { source?: string; feature_pricing?: Record<string, unknown> };
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

describe('the stale-call sweeper books at the prices the call was authorized with', () => {
  it('developer_key: a developer price raised through the API after authorization is not applied', async () => {
    await addFeature('swept_priced', { developer_price_per_mtok_usd: '2.00000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const { requestId, authorized, answerLate } = await callLeftInFlight(session.token, {
      feature: 'swept_priced',
      route_mode: 'developer_key',
    });
    expect(authorized.route_mode).toBe('developer_key');
    await patchFeature('swept_priced', { developer_price_per_mtok_usd: '40.00000000' });
    // The call's record keeps what it was authorized with.
    expect(await sql(testEnv, `${recordedPrices} where client_request_id = $1`, [requestId])).toEqual([
      {
        developer_price_per_mtok_usd: '2.00000000',
        open_fee_usd: '0.00000000',
        developer_share_bps: 5000,
        platform_markup_bps: 2000,
        platform_fee_bps: 1000,
      },
    ]);

    await makeStale(requestId);
    // The sweeping worker's platform fee differs from the authorizing gateway's (a deploy between).
    expect(await sweep({ PLATFORM_FEE_BPS: '3000' })).toEqual({ booked: 1, abandoned: 0 });

    const booked = await booking(requestId);
    const old = { developerPricePerMtokUsd: '2.00000000', openFeeUsd: '0.00000000' };
    expect(booked).toMatchObject({
      estimated: true,
      receivable_usd: '0.00000000',
      ...expectedSplit('developer_key', authorized, old, { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_000 }),
    });
    // At the old price the worst case is exactly what was held: never above the hold.
    expect(booked.retail_usd).toBe(authorized.hold);
    expect(booked.metadata.source).toBe('stale_call_sweep');
    expect(booked.metadata.feature_pricing).toEqual({
      feature_key: 'swept_priced',
      developer_price_per_mtok_usd: '2.00000000',
      open_fee_usd: '0.00000000',
    });
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });

    // The gateway's own late booking is the same money key: no second charge at any price.
    await answerLate();
    expect(await sql(testEnv, 'select 1 from usage_events where client_request_id = $1', [requestId])).toHaveLength(1);
  });

  it('byok: an open fee raised through the API after authorization is not applied', async () => {
    await addFeature('swept_fee', { open_fee_usd: '0.01000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const userKey = await call(api(), testEnv, '/v1/user/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey() },
      token: session.token,
    });
    expect(userKey.status).toBe(201);
    const { requestId, authorized } = await callLeftInFlight(session.token, { feature: 'swept_fee', route_mode: 'byok' });
    expect(authorized).toMatchObject({ route_mode: 'byok', hold: '0.01000000' });
    await patchFeature('swept_fee', { open_fee_usd: '0.50000000' });

    await makeStale(requestId);
    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    expect(await booking(requestId)).toEqual({
      estimated: true,
      retail_usd: '0.01000000',
      developer_revenue_usd: '0.00900000',
      platform_share_usd: '0.00100000',
      receivable_usd: '0.00000000',
      metadata: {
        catalog_version: null,
        source: 'stale_call_sweep',
        feature_pricing: { feature_key: 'swept_fee', developer_price_per_mtok_usd: null, open_fee_usd: '0.01000000' },
      },
    });
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '0.99000000', held: '0.00000000', available: '0.99000000' });
  });

  it("platform: the markup the gateway held with and the app's channel share at authorization, not the sweeper's", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const { requestId, authorized } = await callLeftInFlight(session.token, { route_mode: 'platform' });
    expect(authorized.route_mode).toBe('platform');
    await sql(testEnv, `update apps set developer_share_bps = 9000 where public_app_id = $1`, [demoPublicAppId]);
    try {
      await makeStale(requestId);
      expect(await sweep({ PLATFORM_MARKUP_BPS: '5000' })).toEqual({ booked: 1, abandoned: 0 });
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
        { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_000 },
      ),
    });
    expect(booked.retail_usd).toBe(authorized.hold);
  });

  it("rates in the catalog's price period of the call's authorization, not the sweep's (deepseek's off-peak hours)", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const { requestId, authorized } = await callLeftInFlight(session.token, { model: 'deepseek:deepseek-chat', route_mode: 'platform' });
    expect(authorized.route_mode).toBe('platform');
    // deepseek-chat costs half from 16:30 to 00:30 UTC: put the call's authorization yesterday, in the other period than now.
    const now = new Date();
    const minutes = now.getUTCHours() * 60 + now.getUTCMinutes();
    const offPeakNow = minutes >= 16 * 60 + 30 || minutes < 30;
    const authorizedAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1, offPeakNow ? 12 : 20));
    await sql(testEnv, `update gateway_calls set created_at = $2 where client_request_id = $1`, [requestId, authorizedAt]);

    await makeStale(requestId);
    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
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

  it('a call authorized before prices were frozen (migration 0014) is booked at the prices read when swept', async () => {
    await addFeature('swept_legacy', { developer_price_per_mtok_usd: '2.00000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const { requestId, authorized } = await callLeftInFlight(session.token, {
      feature: 'swept_legacy',
      route_mode: 'developer_key',
    });
    await sql(
      testEnv,
      `update gateway_calls set developer_price_per_mtok_usd = null, open_fee_usd = null, developer_share_bps = null,
              platform_markup_bps = null, platform_fee_bps = null
        where client_request_id = $1`,
      [requestId],
    );
    await patchFeature('swept_legacy', { developer_price_per_mtok_usd: '3.00000000' });

    await makeStale(requestId);
    expect(await sweep({ PLATFORM_FEE_BPS: '2000' })).toEqual({ booked: 1, abandoned: 0 });
    const current = { developerPricePerMtokUsd: '3.00000000', openFeeUsd: '0.00000000' };
    const booked = await booking(requestId);
    expect(booked).toMatchObject(
      expectedSplit('developer_key', authorized, current, { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 2_000 }),
    );
    expect(booked.metadata.feature_pricing).toEqual({
      feature_key: 'swept_legacy',
      developer_price_per_mtok_usd: '3.00000000',
      open_fee_usd: '0.00000000',
    });
  });
});
