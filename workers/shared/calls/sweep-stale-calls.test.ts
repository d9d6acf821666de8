/**
 * The API's sweeper books the `gateway_calls` rows the retired per-call path left `in_flight` with a
 * hold of their own (e.g. across the deploy that retired it): once past deadline and grace, each is
 * booked once at its bound, its hold settled. At the prices recorded with it (the feature's price and
 * open fee, the app's channel share, the authorizing gateway's markup and fee, the catalog's price
 * period of its `created_at`), or — a row from before prices were recorded — at those read when swept;
 * at its costliest candidate when it had fallbacks, each within its own output cap, on the
 * developer_key route only those of the reserved key's provider.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fundedSession, newRequestId, usageRows, wallet } from '../../test/gateway-kit.ts';
import { api, call, createDatabase, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../test/harness.ts';
import { fakeOpenAiKey } from '../../test/provider-keys-kit.ts';
import type { Env } from '../env.ts';
import { reconcileLedger } from '../ledger/reconcile.ts';
import { formatUsd, parseDatabaseAmount, subtractUsd } from '../money/index.ts';
import { featurePricingFromRow, rateUsage, type RatingSettings, type RouteMode } from '../rating/index.ts';
import { sweepStaleCalls } from './sweep-stale-calls.ts';

let testEnv: TestEnv;
let developerKeyId: string;
beforeAll(async () => {
  testEnv = await createTestEnv({ CALL_SETTLE_GRACE_SECONDS: '1' });
  const stored = await call(api(), testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
  developerKeyId = ((await stored.json()) as { id: string }).id;
});

const features = `/v1/developer/apps/${demoPublicAppId}/features`;

async function addFeature(featureKey: string, prices: Record<string, string>) {
  const created = await call(api(), testEnv, features, {
    json: { feature_key: featureKey, name: featureKey, default_model: 'openai:gpt-4o-mini', ...prices },
    token: developerKey,
  });
  expect(created.status).toBe(201);
}

/** What the retired per-call path recorded with a call (since prices were recorded; null before). */
interface RecordedPrices {
  developerPricePerMtokUsd: string | null;
  openFeeUsd: string | null;
  developerShareBps: number;
  platformMarkupBps: number;
  platformFeeBps: number;
}

interface LegacyCall {
  routeMode: RouteMode;
  featureKey: string;
  provider?: string;
  model?: string;
  input: number;
  output: number;
  hold: string;
  prices: RecordedPrices | null;
  fallbacks?: string[];
  createdAt?: Date;
  cacheLifetime?: '5m' | '1h';
}

/**
 * A call as the retired per-call path left it when its isolate died: its row `in_flight` (past its
 * deadline) with the route, bounds, prices and fallbacks it was authorized with, and its own hold.
 */
async function legacyCallInFlight(session: { endUserId: string }, legacy: LegacyCall): Promise<string> {
  const id = crypto.randomUUID();
  const moneyKey = `call:${id}`;
  const requestId = newRequestId();
  const createdAt = legacy.createdAt ?? new Date();
  await sql(
    testEnv,
    `insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode, provider,
                                model, provider_credential_id, bound_input_tokens, bound_output_tokens, deadline_at, created_at,
                                developer_price_per_mtok_usd, open_fee_usd, developer_share_bps, platform_markup_bps, platform_fee_bps,
                                fallback_models, bound_cache_lifetime)
     select $1, $2, $3, $4, a.id, $5, $6, $7, $8, $9, $10, $11, $12, now() - interval '1 hour', $13, $14, $15, $16, $17, $18, $19, $21
       from apps a where a.public_app_id = $20`,
    [
      id,
      moneyKey,
      requestId,
      'f'.repeat(64),
      session.endUserId,
      legacy.featureKey,
      legacy.routeMode,
      legacy.provider ?? 'openai',
      legacy.model ?? 'gpt-4o-mini',
      legacy.routeMode === 'platform' ? null : developerKeyId,
      legacy.input,
      legacy.output,
      createdAt,
      legacy.prices?.developerPricePerMtokUsd ?? null,
      legacy.prices?.openFeeUsd ?? null,
      legacy.prices?.developerShareBps ?? null,
      legacy.prices?.platformMarkupBps ?? null,
      legacy.prices?.platformFeeBps ?? null,
      legacy.fallbacks === undefined ? null : JSON.stringify(legacy.fallbacks),
      demoPublicAppId,
      legacy.cacheLifetime ?? null,
    ],
  );
  const [held] = await sql<{ outcome: string }>(testEnv, 'select outcome from faucet_reserve_hold($1, $2, $3, 3600)', [
    session.endUserId,
    moneyKey,
    legacy.hold,
  ]);
  expect(held?.outcome).toBe('reserved');
  return requestId;
}

async function withDatabase<T>(work: (db: ReturnType<typeof createDatabase>['db']) => Promise<T>): Promise<T> {
  const { db, pool } = createDatabase(testEnv);
  try {
    return await work(db);
  } finally {
    await pool.end();
  }
}

const sweep = (env: Partial<Env> = {}) => withDatabase((db) => sweepStaleCalls(db, { ...testEnv, ...env }));

/** What the booking of a call charged and split, and the metadata of its ledger transaction. */
async function booking(requestId: string) {
  const rows = await sql<{
    estimated: boolean;
    model: string;
    output_tokens: number;
    retail_usd: string;
    developer_revenue_usd: string;
    platform_share_usd: string;
    upstream_cost_usd: string;
    metadata: { source?: string; feature_pricing?: Record<string, unknown> };
  }>(
    testEnv,
    `select u.estimated, u.model, u.output_tokens, u.retail_usd::text, u.developer_revenue_usd::text, u.platform_share_usd::text,
            u.upstream_cost_usd::text, t.metadata
       from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The rating of `tokens` of a model at the given prices and settings. */
function rated(
  routeMode: RouteMode,
  model: { provider?: string; model: string; pricedAt?: Date },
  tokens: { input: number; output: number },
  prices: { developerPricePerMtokUsd: string | null; openFeeUsd: string | null },
  settings: RatingSettings,
) {
  const usage = rateUsage(
    {
      routeMode,
      provider: model.provider ?? 'openai',
      model: model.model,
      inputTokens: tokens.input,
      outputTokens: tokens.output,
      estimated: true,
      ...(model.pricedAt === undefined ? {} : { pricedAt: model.pricedAt }),
    },
    featurePricingFromRow(prices),
    settings,
  );
  return {
    retail_usd: formatUsd(usage.retailUsd),
    developer_revenue_usd: formatUsd(usage.developerRevenueUsd),
    platform_share_usd: formatUsd(usage.platformShareUsd),
    upstream_cost_usd: formatUsd(usage.upstreamCostUsd),
  };
}

const tokens = { input: 120, output: 400 };
const atAuthorization = { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 1_000 };
const noFeaturePrices = { developerPricePerMtokUsd: null, openFeeUsd: null };

describe('the sweeper books a legacy in_flight row at its bound, once', () => {
  it('at the prices recorded at authorization, not those of the sweep; its hold settled; a second sweep books nothing', async () => {
    await addFeature('legacy_priced', { developer_price_per_mtok_usd: '2.00000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const recorded = { developerPricePerMtokUsd: '2.00000000', openFeeUsd: '0.00000000' };
    const expected = rated('developer_key', { model: 'gpt-4o-mini' }, tokens, recorded, atAuthorization);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'developer_key',
      featureKey: 'legacy_priced',
      ...tokens,
      hold: expected.retail_usd,
      prices: { ...recorded, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
    });
    // Since then: the feature's price raised, and the sweeping worker's fee differs (a deploy between).
    await call(api(), testEnv, `${features}/legacy_priced`, {
      method: 'PATCH',
      json: { developer_price_per_mtok_usd: '40.00000000' },
      token: developerKey,
    });
    expect(await sweep({ PLATFORM_FEE_BPS: '3000' })).toEqual({ booked: 1, abandoned: 0 });

    expect(await booking(requestId)).toMatchObject({
      estimated: true,
      ...expected,
      metadata: {
        source: 'stale_call_sweep',
        feature_pricing: { feature_key: 'legacy_priced', developer_price_per_mtok_usd: '2.00000000', open_fee_usd: '0.00000000' },
      },
    });
    const left = formatUsd(subtractUsd(parseDatabaseAmount('1.00000000'), parseDatabaseAmount(expected.retail_usd)));
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: left, held: '0.00000000', available: left });
    expect(await sweep()).toEqual({ booked: 0, abandoned: 0 });
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('a prompt with cache breakpoints: its input at the write price of their longest lifetime, as the hold priced it', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const sonnet = { provider: 'anthropic', model: 'claude-sonnet-4-5' };
    const plain = rated('platform', sonnet, tokens, noFeaturePrices, atAuthorization);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'platform',
      featureKey: 'chat',
      ...sonnet,
      ...tokens,
      cacheLifetime: '1h',
      hold: '0.01000000',
      prices: { ...noFeaturePrices, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
    });
    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    // 120 input tokens at 6.00 USD per million (a one-hour write), 400 output at 15.00: 0.00672, not 0.00636 at 3.00.
    expect(plain.upstream_cost_usd).toBe('0.00636000');
    expect(await booking(requestId)).toMatchObject({ upstream_cost_usd: '0.00672000' });
    const [row] = await sql<{ cache_write_1h_tokens: number }>(
      testEnv,
      'select cache_write_1h_tokens from usage_events where client_request_id = $1',
      [requestId],
    );
    expect(row?.cache_write_1h_tokens).toBe(120);
  });

  it("platform: at the markup and the app's channel share recorded at authorization, not the sweep's", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const expected = rated('platform', { model: 'gpt-4o-mini' }, tokens, noFeaturePrices, atAuthorization);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'platform',
      featureKey: 'chat',
      ...tokens,
      hold: expected.retail_usd,
      prices: { ...noFeaturePrices, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
    });
    await sql(testEnv, `update apps set developer_share_bps = 9000 where public_app_id = $1`, [demoPublicAppId]);
    try {
      expect(await sweep({ PLATFORM_MARKUP_BPS: '5000' })).toEqual({ booked: 1, abandoned: 0 });
    } finally {
      await sql(testEnv, `update apps set developer_share_bps = 5000 where public_app_id = $1`, [demoPublicAppId]);
    }
    expect(await booking(requestId)).toMatchObject(expected);
  });

  it("in the catalog's price period of its authorization, not the sweep's (deepseek's off-peak hours)", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    // deepseek-chat costs half from 16:30 to 00:30 UTC: the call was authorized yesterday, in the other period than now.
    const now = new Date();
    const minutes = now.getUTCHours() * 60 + now.getUTCMinutes();
    const offPeakNow = minutes >= 16 * 60 + 30 || minutes < 30;
    const authorizedAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1, offPeakNow ? 12 : 20));
    const deepseek = (pricedAt: Date) =>
      rated('platform', { provider: 'deepseek', model: 'deepseek-chat', pricedAt }, tokens, noFeaturePrices, atAuthorization);
    expect(deepseek(authorizedAt).upstream_cost_usd).not.toBe(deepseek(now).upstream_cost_usd);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'platform',
      featureKey: 'chat',
      provider: 'deepseek',
      model: 'deepseek-chat',
      ...tokens,
      hold: deepseek(authorizedAt).retail_usd,
      prices: { ...noFeaturePrices, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
      createdAt: authorizedAt,
    });

    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    expect(await booking(requestId)).toMatchObject(deepseek(authorizedAt));
  });

  it('a row from before prices were recorded is booked at the prices read when swept', async () => {
    await addFeature('legacy_unrecorded', { developer_price_per_mtok_usd: '3.00000000' });
    const session = await fundedSession(testEnv, '1.00000000');
    const current = { developerPricePerMtokUsd: '3.00000000', openFeeUsd: '0.00000000' };
    const sweepers = { platformMarkupBps: 2_000, channelShareBps: 5_000, platformFeeBps: 2_000 };
    const expected = rated('developer_key', { model: 'gpt-4o-mini' }, tokens, current, sweepers);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'developer_key',
      featureKey: 'legacy_unrecorded',
      ...tokens,
      hold: expected.retail_usd,
      prices: null,
    });

    expect(await sweep({ PLATFORM_FEE_BPS: '2000' })).toEqual({ booked: 1, abandoned: 0 });
    expect(await booking(requestId)).toMatchObject({
      ...expected,
      metadata: {
        feature_pricing: { feature_key: 'legacy_unrecorded', developer_price_per_mtok_usd: '3.00000000', open_fee_usd: '0.00000000' },
      },
    });
  });

  it('with fallbacks: at the costliest candidate recorded, each within its own output cap (the bound set by a cheaper model)', async () => {
    const session = await fundedSession(testEnv, '5.00000000');
    // gpt-4.1-nano publishes 32,768 output tokens, gpt-4o 16,384: the call's output bound is 32,768.
    const withinCap = rated('platform', { model: 'gpt-4o' }, { input: tokens.input, output: 16_384 }, noFeaturePrices, atAuthorization);
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'platform',
      featureKey: 'chat',
      input: tokens.input,
      output: 32_768,
      hold: withinCap.retail_usd,
      prices: { ...noFeaturePrices, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
      fallbacks: ['openai:gpt-4.1-nano', 'openai:gpt-4o'],
    });

    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    // gpt-4o at its own 16,384 output tokens — what the hold covered — not at 32,768 it can never answer, nor at the cheaper models.
    expect(await booking(requestId)).toMatchObject({ model: 'gpt-4o', output_tokens: 16_384, ...withinCap });
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });
  });

  it("developer_key with fallbacks: only those of the reserved key's provider count, a costlier one of another provider is never booked", async () => {
    const session = await fundedSession(testEnv, '5.00000000');
    const recorded = { developerPricePerMtokUsd: null, openFeeUsd: null };
    const gpt4o = rated('developer_key', { model: 'gpt-4o' }, tokens, recorded, atAuthorization);
    const claude = rated('developer_key', { provider: 'anthropic', model: 'claude-sonnet-4-5' }, tokens, recorded, atAuthorization);
    expect(Number(claude.retail_usd)).toBeGreaterThan(Number(gpt4o.retail_usd));
    const requestId = await legacyCallInFlight(session, {
      routeMode: 'developer_key',
      featureKey: 'chat',
      ...tokens,
      hold: gpt4o.retail_usd,
      prices: { ...recorded, developerShareBps: 5_000, platformMarkupBps: 2_000, platformFeeBps: 1_000 },
      fallbacks: ['anthropic:claude-sonnet-4-5', 'openai:gpt-4o'],
    });

    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    expect(await booking(requestId)).toMatchObject({ model: 'gpt-4o', ...gpt4o });
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });
});
