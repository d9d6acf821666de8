/**
 * GET /v1/developer/wallet against the ledger: after calls on every route (platform, developer_key,
 * byok, local), a payout run, more revenue and the payout's booking, every figure equals what the
 * ledger's own rows say, and reconciliation stays clean.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { postReceivableDebit } from '#shared/ledger/post-receivable-debit.ts';
import {
  addUsd,
  compareUsd,
  formatUsd,
  isNegativeUsd,
  parseDatabaseAmount,
  parseWireAmount,
  subtractUsd,
  zeroUsd,
} from '#shared/money/index.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith, settled } from '../../../test/gateway-kit.ts';
import {
  adminToken,
  api,
  call,
  createTestEnv,
  demoFixture,
  demoPublicAppId,
  developerKey,
  sql,
  type TestEnv,
} from '../../../test/harness.ts';
import { openLedgerDatabase } from '../../../test/ledger-kit.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
let walletId: string;
let appId: string;
const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
type Body = Record<string, any>;

beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
  const fixture = await demoFixture(testEnv);
  walletId = fixture.developer_wallet_id;
  appId = fixture.app_id;
  // A fee on byok and local calls, so every route earns the developer something.
  await sql(testEnv, `update app_features set open_fee_usd = 0.01 where app_id = $1 and feature_key = 'chat'`, [appId]);
});

const get = async (path: string, token = developerKey, init: { json?: unknown; method?: string } = {}) => {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body };
};
const developerWallet = async () => {
  const response = await get('/v1/developer/wallet');
  expect(response.status).toBe(200);
  return response.body;
};

/** What the ledger's rows say about the developer wallet, figured independently of the endpoint's statement. */
async function ledgerFigures() {
  const [row] = await sql<{ entries: string; deltas: string; open_payouts: string; active_holds: string }>(
    testEnv,
    `select (select coalesce(sum(amount), 0)::numeric(20, 8)::text from ledger_entries where wallet_id = $1) as entries,
            (select coalesce(sum(amount), 0)::numeric(20, 8)::text from wallet_balance_deltas where wallet_id = $1) as deltas,
            (select coalesce(sum(amount), 0)::numeric(20, 8)::text from payouts where wallet_id = $1
               and status in ('pending', 'processing')) as open_payouts,
            (select coalesce(sum(amount), 0)::numeric(20, 8)::text from balance_holds where wallet_id = $1 and status = 'active')
              as active_holds`,
    [walletId],
  );
  const balance = parseDatabaseAmount(row!.entries);
  const available = subtractUsd(balance, parseDatabaseAmount(row!.active_holds));
  return {
    wallet_id: walletId,
    currency: 'USD',
    balance_usd: row!.entries,
    pending_usd: row!.deltas,
    reserved_usd: row!.open_payouts,
    available_usd: isNegativeUsd(available) ? '0.00000000' : formatUsd(available),
  };
}

async function revenueOf(requestIds: string[]) {
  // The wallet objects book what they settled first (their flush).
  await settled(testEnv);
  const rows = await sql<{ revenue: string }>(
    testEnv,
    `select developer_revenue_usd::text as revenue from usage_events where client_request_id = any($1::text[])`,
    [requestIds],
  );
  expect(rows).toHaveLength(requestIds.length);
  return addUsd(zeroUsd(), ...rows.map((row) => parseDatabaseAmount(row.revenue)));
}

const reconciled = async () => ((await get('/v1/admin/reconciliation/ledger', adminToken)).body as { ok: boolean }).ok;

describe('GET /v1/developer/wallet', () => {
  it('agrees with the ledger after calls on every route, a payout run, more revenue and the payout booked', async () => {
    const start = await developerWallet();
    expect(start).toEqual(await ledgerFigures());
    expect(Object.keys(start).sort()).toEqual(['available_usd', 'balance_usd', 'currency', 'pending_usd', 'reserved_usd', 'wallet_id']);

    // One call on each route.
    const session = await fundedSession(testEnv, '5.00000000');
    const requestIds: string[] = [];
    const gatewayCall = async (body: Record<string, unknown>, route: string) => {
      const response = await chat(gateway, testEnv, session.token, { messages: [{ role: 'user', content: 'hi' }], ...body });
      const answer = (await response.json()) as Body;
      expect([response.status, answer.faucet?.route_mode]).toEqual([200, route]);
      requestIds.push(answer.faucet.request_id);
    };
    await gatewayCall({ model: 'mock:echo', feature: 'chat' }, 'platform');
    const userKey = await get('/v1/user/provider-keys', session.token, { json: { provider: 'openai', api_key: fakeOpenAiKey() } });
    expect(userKey.status).toBe(201);
    await gatewayCall({ model: 'openai:gpt-4o-mini', feature: 'chat', route_mode: 'byok' }, 'byok');
    const developerProviderKey = await get('/v1/developer/provider-keys', developerKey, {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '10.00000000' },
    });
    expect(developerProviderKey.status).toBe(201);
    await gatewayCall({ model: 'openai:gpt-4o-mini', feature: 'chat', route_mode: 'developer_key' }, 'developer_key');
    const localId = `local-${crypto.randomUUID()}`;
    const local = await get('/v1/usage/local', session.token, {
      json: {
        request_id: localId,
        public_app_id: demoPublicAppId,
        user_id_hash: session.userRef,
        feature: 'chat',
        route_mode: 'local',
        provider: 'ollama',
        model: 'llama3.2:3b',
        input_tokens: 10,
        output_tokens: 10,
        estimated: true,
        occurred_at: new Date().toISOString(),
      },
    });
    expect(local.body.recorded).toBe(true);
    requestIds.push(localId);

    const earned = await revenueOf(requestIds);
    expect(compareUsd(earned, zeroUsd())).toBe(1);
    const afterCalls = await developerWallet();
    expect(afterCalls).toEqual(await ledgerFigures());
    // The calls' revenue is appended to the hot account, not yet rolled up: pending grew by exactly it.
    expect(afterCalls.pending_usd).toBe(formatUsd(addUsd(parseDatabaseAmount(start.pending_usd), earned)));
    expect(afterCalls.balance_usd).toBe(formatUsd(addUsd(parseDatabaseAmount(start.balance_usd), earned)));
    expect(afterCalls.available_usd).toBe(afterCalls.balance_usd);

    // A payout run takes exactly what the wallet showed as available, rolls the pending revenue up and reserves it.
    const run = await get('/v1/admin/payouts/run-mock', adminToken, { json: { threshold_usd: '0.00000001' } });
    const payout = (run.body.data as Body[]).find((row) => row.wallet_id === walletId)!;
    expect(payout.amount_usd).toBe(afterCalls.available_usd);
    const reserved = await developerWallet();
    expect(reserved).toEqual(await ledgerFigures());
    expect(reserved).toMatchObject({
      balance_usd: afterCalls.balance_usd,
      pending_usd: '0.00000000',
      reserved_usd: payout.amount_usd,
      available_usd: '0.00000000',
    });

    // Revenue earned after the run is available beside the reservation.
    await gatewayCall({ model: 'mock:echo', feature: 'chat', route_mode: 'platform' }, 'platform');
    const more = await revenueOf(requestIds.slice(-1));
    const withMore = await developerWallet();
    expect(withMore).toEqual(await ledgerFigures());
    expect(withMore).toMatchObject({ pending_usd: formatUsd(more), reserved_usd: payout.amount_usd, available_usd: formatUsd(more) });

    // Paid: the reservation is gone and the balance dropped by the payout.
    expect((await get(`/v1/admin/payouts/${payout.id}/approve`, adminToken, { json: { operator_note: 'ok' } })).status).toBe(200);
    expect((await get(`/v1/admin/payouts/${payout.id}/mark-paid`, adminToken, { method: 'POST' })).status).toBe(200);
    const paid = await developerWallet();
    expect(paid).toEqual(await ledgerFigures());
    expect(paid).toMatchObject({
      balance_usd: formatUsd(subtractUsd(parseDatabaseAmount(withMore.balance_usd), parseDatabaseAmount(payout.amount_usd))),
      reserved_usd: '0.00000000',
      available_usd: formatUsd(more),
    });
    expect(await reconciled()).toBe(true);
  });

  it('shows a clawback that took the wallet below zero as a negative balance with nothing available', async () => {
    const before = await developerWallet();
    const [adjustments] = await sql<{ id: string }>(testEnv, `select faucet_system_wallet('platform_adjustments') as id`);
    const database = openLedgerDatabase(testEnv, 1);
    try {
      await postReceivableDebit(database.db, {
        kind: 'revenue_clawback',
        walletId,
        counterWalletId: adjustments!.id,
        amount: addUsd(parseDatabaseAmount(before.balance_usd), parseWireAmount('1.00000000')),
        idempotencyKey: `test-clawback-${crypto.randomUUID()}`,
        requestId: 'test-clawback',
      });
    } finally {
      await database.close();
    }
    const wallet = await developerWallet();
    expect(wallet).toEqual(await ledgerFigures());
    expect(wallet).toMatchObject({ balance_usd: '-1.00000000', available_usd: '0.00000000' });
    expect(await reconciled()).toBe(true);
  });
});
