/**
 * The end-to-end onboarding, through the HTTP API alone: the operator creates a second
 * developer; with the key it got, that developer creates an app and a priced feature, stores a
 * provider key, mints a session for an end user under the app's policy, and the user makes a call
 * on each route (platform, developer_key, byok, local). The revenue shows in the second developer's
 * wallet and usage report, exactly what the usage records say; the first (demo) developer sees none
 * of it, and neither can reach the other's app. It ends on reconciliation and the upstream audit.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { addUsd, compareUsd, formatUsd, parseDatabaseAmount, parseWireAmount, subtractUsd, zeroUsd } from '#shared/money/index.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { gatewayWith, settled } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';

type Body = Record<string, any>;

let testEnv: TestEnv;
const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });

beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

async function send(path: string, token: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body };
}

async function chat(token: string, body: Record<string, unknown>) {
  const response = await call(gateway, testEnv, '/v1/chat/completions', {
    json: { messages: [{ role: 'user', content: 'hi' }], ...body },
    token,
  });
  return { status: response.status, body: (await response.json()) as Body };
}

const today = () => new Date().toISOString().slice(0, 10);
const usageOf = (token: string) => send(`/v1/developer/usage?from=${today()}&to=${today()}`, token);

describe('a second developer onboards through the API alone', () => {
  it('creates an app and a priced feature, serves calls on every route, sees the revenue; the first developer sees none of it', async () => {
    const firstWalletBefore = await send('/v1/developer/wallet', developerKey);
    const firstUsageBefore = await usageOf(developerKey);
    expect([firstWalletBefore.status, firstUsageBefore.status]).toEqual([200, 200]);

    // The operator onboards the developer; the key is shown once.
    const onboarded = await send('/v1/admin/developers', adminToken, {
      json: { name: 'Second Co', email: `second-${crypto.randomUUID()}@example.com`, payout_details_ref: 'acct_test_second' },
    });
    expect(onboarded.status).toBe(201);
    const key = onboarded.body.key.api_key as string;
    expect(key).toMatch(/^fdk_/);

    // App and feature, with a developer price for the developer_key route and an open fee for byok/local.
    const app = await send('/v1/developer/apps', key, { json: { name: 'Second App' } });
    expect(app.status).toBe(201);
    const publicAppId = app.body.public_app_id as string;
    const feature = await send(`/v1/developer/apps/${publicAppId}/features`, key, {
      json: {
        feature_key: 'assist',
        name: 'Assistant',
        default_model: 'openai:gpt-4o-mini',
        developer_price_per_mtok_usd: '4.00000000',
        open_fee_usd: '0.01000000',
      },
    });
    expect(feature.status).toBe(201);
    expect(feature.body.is_default).toBe(true);
    const providerKey = await send('/v1/developer/provider-keys', key, {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '10.00000000' },
    });
    expect(providerKey.status).toBe(201);

    // The app's backend mints a session for its end user; the operator funds it with test money.
    const session = await send('/v1/sessions', key, { json: { public_app_id: publicAppId, external_user_id: 'second-user-1' } });
    expect(session.status).toBe(201);
    const token = session.body.session_token as string;
    const userWallet = await send('/v1/user/wallet', token);
    const credited = await send(`/v1/admin/wallets/${userWallet.body.wallet_id}/credit-test-balance`, adminToken, {
      json: { amount_usd: '5.00000000' },
    });
    expect([200, 201]).toContain(credited.status);

    // One call on each route; the calls name no feature, so the app's default serves them.
    const served: string[] = [];
    const platform = await chat(token, { model: 'mock:echo' });
    expect([platform.status, platform.body.faucet?.route_mode, platform.body.faucet?.feature]).toEqual([200, 'platform', 'assist']);
    served.push(platform.body.faucet.request_id);
    const developerRoute = await chat(token, { model: 'openai:gpt-4o-mini', route_mode: 'developer_key' });
    expect([developerRoute.status, developerRoute.body.faucet?.route_mode]).toEqual([200, 'developer_key']);
    served.push(developerRoute.body.faucet.request_id);
    const userKey = await send('/v1/user/provider-keys', token, { json: { provider: 'openai', api_key: fakeOpenAiKey() } });
    expect(userKey.status).toBe(201);
    const byok = await chat(token, { model: 'openai:gpt-4o-mini', route_mode: 'byok' });
    expect([byok.status, byok.body.faucet?.route_mode]).toEqual([200, 'byok']);
    served.push(byok.body.faucet.request_id);
    const localId = `local-${crypto.randomUUID()}`;
    const local = await send('/v1/usage/local', token, {
      json: {
        request_id: localId,
        public_app_id: publicAppId,
        user_id_hash: session.body.user_ref,
        feature: 'assist',
        route_mode: 'local',
        provider: 'ollama',
        model: 'llama3.2:3b',
        input_tokens: 10,
        output_tokens: 10,
        estimated: false,
        occurred_at: new Date().toISOString(),
      },
    });
    expect(local.body.recorded).toBe(true);
    served.push(localId);

    // What the usage records say the developer earned, each route earning something (once the
    // wallet objects have booked what they settled: their flush, within a second on its own).
    await settled(testEnv);
    const records = await sql<{ route_mode: string; revenue: string; retail: string }>(
      testEnv,
      `select route_mode, developer_revenue_usd::text as revenue, retail_usd::text as retail from usage_events
        where coalesce(client_request_id, request_id) = any($1::text[]) order by route_mode`,
      [served],
    );
    expect(records.map((row) => row.route_mode)).toEqual(['byok', 'developer_key', 'local', 'platform']);
    for (const row of records) expect(compareUsd(parseDatabaseAmount(row.revenue), zeroUsd()), row.route_mode).toBe(1);
    const earned = addUsd(zeroUsd(), ...records.map((row) => parseDatabaseAmount(row.revenue)));

    // The second developer's wallet holds exactly that revenue (new developer: it started at zero).
    const wallet = await send('/v1/developer/wallet', key);
    expect(wallet.status).toBe(200);
    expect(wallet.body.balance_usd).toBe(formatUsd(earned));

    // Their usage report shows the same revenue, one row per route, all under their app and feature.
    const usage = await usageOf(key);
    expect(usage.status).toBe(200);
    expect(usage.body.data.map((row: Body) => [row.public_app_id, row.feature_key, row.route_mode]).sort()).toEqual(
      ['byok', 'developer_key', 'local', 'platform'].map((route) => [publicAppId, 'assist', route]),
    );
    expect(usage.body.totals.calls).toBe(4);
    expect(usage.body.totals.developer_revenue_usd).toBe(formatUsd(earned));

    // Their end user is listed, by user_ref, with the spend of the four calls.
    const endUsers = await send('/v1/developer/end-users', key);
    expect(endUsers.status).toBe(200);
    expect(endUsers.body.data).toHaveLength(1);
    const spent = addUsd(zeroUsd(), ...records.map((row) => parseDatabaseAmount(row.retail)));
    expect(endUsers.body.data[0]).toMatchObject({ user_ref: session.body.user_ref, app: publicAppId, spend_usd: formatUsd(spent) });
    expect(JSON.stringify(endUsers.body)).not.toContain('second-user-1');

    // The first developer sees none of it: same wallet, same usage, no such end user, no access to the app.
    const firstWalletAfter = await send('/v1/developer/wallet', developerKey);
    expect(firstWalletAfter.body.balance_usd).toBe(firstWalletBefore.body.balance_usd);
    const firstUsageAfter = await usageOf(developerKey);
    expect(firstUsageAfter.body.totals).toEqual(firstUsageBefore.body.totals);
    expect(firstUsageAfter.body.data.some((row: Body) => row.public_app_id === publicAppId)).toBe(false);
    const firstEndUsers = await send('/v1/developer/end-users?limit=100', developerKey);
    expect(JSON.stringify(firstEndUsers.body)).not.toContain(session.body.user_ref);
    for (const path of [`/v1/developer/apps/${publicAppId}`, `/v1/developer/apps/${publicAppId}/features/assist`]) {
      const foreign = await send(path, developerKey);
      expect([foreign.status, foreign.body.error?.code], path).toEqual([404, 'not_found']);
    }
    // …and the second developer cannot reach the first one's app either.
    const reverse = await send(`/v1/developer/apps/${demoPublicAppId}`, key);
    expect(reverse.status).toBe(404);
    // Nor mint a session for it.
    const foreignSession = await send('/v1/sessions', key, { json: { public_app_id: demoPublicAppId, external_user_id: 'x' } });
    expect(foreignSession.status).toBeGreaterThanOrEqual(400);
    expect(foreignSession.status).toBeLessThan(500);

    // The ledger agrees with itself; the retail the user paid is what the wallet lost.
    const reconciliation = await send('/v1/admin/reconciliation/ledger', adminToken);
    expect(reconciliation.body.ok).toBe(true);
    // …and with what was paid upstream: every upstream call on a paid route billed once.
    const upstreamAudit = await send('/v1/admin/reconciliation/upstream', adminToken);
    expect(upstreamAudit.body).toMatchObject({ ok: true, unbilled_calls: 0 });
    const userWalletAfter = await send('/v1/user/wallet', token);
    expect(userWalletAfter.body.balance_usd).toBe(formatUsd(subtractUsd(parseWireAmount('5.00000000'), spent)));
  });
});
