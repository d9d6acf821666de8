import { beforeAll, describe, expect, it } from 'vitest';
import { chargeRefundedEvent } from '../../../../scripts/lib/stripe-events.ts';
import { clawbackAmount } from '#shared/ledger/claw-back-revenue.ts';
import {
  balanceOf,
  chargeOf,
  openLedgerDatabase,
  platformCall,
  type LedgerTestDatabase,
  spendWithDemoDeveloper,
} from '../../../test/ledger-kit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { formatUsd, parseDatabaseAmount } from '#shared/money/index.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 8);
  return () => database.close();
});

interface Clawback {
  id: string;
  status: string;
  developer_id: string;
  developer_wallet_id: string;
  user_wallet_id: string;
  source_transaction_id: string;
  source_kind: string;
  spent_usd: string;
  developer_revenue_basis_usd: string;
  retail_basis_usd: string;
  amount_usd: string;
  reversal_note: string | null;
}

const spend = (endUserId: string, rated: ReturnType<typeof chargeOf>) => spendWithDemoDeveloper(database, testEnv, endUserId, rated);

/** floor(spent × developer / retail) in 1e-8 units, computed independently of the money module. */
function expectedClawback(spent: string, developer: string, retail: string): string {
  const units = (value: string) => BigInt(value.replace('.', ''));
  const result = (units(spent) * units(developer)) / units(retail);
  return `${result / 100_000_000n}.${(result % 100_000_000n).toString().padStart(8, '0')}`;
}

const listClawbacks = async (query = '') => {
  const response = await call(api(), testEnv, `/v1/admin/clawbacks${query}`, { token: adminToken });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Clawback[] }).data;
};
const reverse = (id: string, note = 'review: the chargeback was a bank error') =>
  call(api(), testEnv, `/v1/admin/clawbacks/${id}/reverse`, { token: adminToken, json: { note } });

async function refundAll(checkout: Awaited<ReturnType<typeof paidCheckout>>, cents = checkout.amountCents) {
  const event = chargeRefundedEvent({
    id: checkout.chargeId,
    payment_intent: checkout.paymentIntentId,
    amount: checkout.amountCents,
    amount_refunded: cents,
  });
  expect((await deliver(testEnv, event)).body.outcome).toBe('refund_booked');
}

describe('clawback of developer revenue after a refund of spent money', () => {
  it('claws back exactly spent × Σ developer revenue / Σ retail of the user, rounded down, from the developer wallet', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout.endUserId, chargeOf('3.00000000'));
    await spend(checkout.endUserId, platformCall(120_000, 90_000));
    const [basis] = await sql<{ developer: string; retail: string }>(
      testEnv,
      'select sum(developer_revenue_usd)::text as developer, sum(retail_usd)::text as retail from usage_events where end_user_id = $1',
      [checkout.endUserId],
    );
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    const developerBefore = await balanceOf(testEnv, developerWalletId);
    const userBefore = await balanceOf(testEnv, checkout.walletId);
    // Refund 8 USD of the 10: the user still held `userBefore`, so the spent part is 8 − userBefore.
    await refundAll(checkout, 800);
    const spent = expectedSpent('8.00000000', userBefore);
    const expected = expectedClawback(spent, basis!.developer, basis!.retail);
    expect(expected).not.toBe('0.00000000');
    const [clawback] = (await listClawbacks()).filter((row) => row.user_wallet_id === checkout.walletId);
    expect(clawback).toMatchObject({
      status: 'booked',
      developer_wallet_id: developerWalletId,
      source_kind: 'refund',
      spent_usd: spent,
      developer_revenue_basis_usd: basis!.developer,
      retail_basis_usd: basis!.retail,
      amount_usd: expected,
    });
    expect(
      formatUsd(
        clawbackAmount(parseDatabaseAmount(spent), {
          developerRevenue: parseDatabaseAmount(basis!.developer),
          retail: parseDatabaseAmount(basis!.retail),
        }),
      ),
    ).toBe(expected);
    const developerAfter = await balanceOf(testEnv, developerWalletId);
    expect(units(developerBefore) - units(developerAfter)).toBe(units(expected));
    const reconciliation = await reconcileLedger(database.db);
    expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
  });

  it('claws back nothing when the refunded money was still in the wallet', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout.endUserId, chargeOf('2.00000000'));
    await refundAll(checkout, 800);
    expect((await listClawbacks()).filter((row) => row.user_wallet_id === checkout.walletId)).toEqual([]);
    expect(await balanceOf(testEnv, checkout.walletId)).toBe('0.00000000');
  });

  it('takes a developer wallet below zero as a receivable, and such a developer gets no payout', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    // Empty the developer wallet first (as if it had been paid out), then claw back.
    const balance = await balanceOf(testEnv, developerWalletId);
    if (balance !== '0.00000000') {
      await sql(
        testEnv,
        `select faucet_post_transaction('payout', $1, null, 'test payout', '{}'::jsonb, array[$2::uuid, faucet_system_wallet('payment_clearing')], array[-$3::numeric, $3::numeric])`,
        [`test-drain-${crypto.randomUUID()}`, developerWalletId, balance],
      );
    }
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout.endUserId, chargeOf('9.00000000'));
    const revenue = await balanceOf(testEnv, developerWalletId);
    await sql(
      testEnv,
      `select faucet_post_transaction('payout', $1, null, 'test payout', '{}'::jsonb, array[$2::uuid, faucet_system_wallet('payment_clearing')], array[-$3::numeric, $3::numeric])`,
      [`test-drain-${crypto.randomUUID()}`, developerWalletId, revenue],
    );
    await refundAll(checkout);
    const after = await balanceOf(testEnv, developerWalletId);
    expect(after.startsWith('-')).toBe(true);
    const [wallet] = await sql<{ receivable: boolean }>(testEnv, 'select receivable from wallets where id = $1', [developerWalletId]);
    expect(wallet!.receivable).toBe(true);
    const run = await call(api(), testEnv, '/v1/admin/payouts/run-mock', { token: adminToken, json: { threshold_usd: '0.00000001' } });
    const created = ((await run.json()) as { data: { wallet_id: string }[] }).data;
    expect(created.map((payout) => payout.wallet_id)).not.toContain(developerWalletId);
    const reconciliation = await reconcileLedger(database.db);
    expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
    expect(reconciliation.receivables.map((row) => row.wallet_id)).toContain(developerWalletId);
  });
});

describe('POST /v1/admin/clawbacks/{id}/reverse', () => {
  it('credits the developer back once, audited with the note; a repeat changes nothing', async () => {
    const checkout = await paidCheckout(testEnv, '5.00000000');
    await spend(checkout.endUserId, chargeOf('5.00000000'));
    await refundAll(checkout);
    const [clawback] = (await listClawbacks('?status=booked')).filter((row) => row.user_wallet_id === checkout.walletId);
    const before = await balanceOf(testEnv, clawback!.developer_wallet_id);
    const results = await Promise.all([reverse(clawback!.id), reverse(clawback!.id), reverse(clawback!.id)]);
    for (const result of results) expect(result.status).toBe(200);
    const body = (await results[0]!.json()) as Clawback;
    expect(body).toMatchObject({ id: clawback!.id, status: 'reversed', reversal_note: 'review: the chargeback was a bank error' });
    expect(units(await balanceOf(testEnv, clawback!.developer_wallet_id)) - units(before)).toBe(units(clawback!.amount_usd));
    const audit = await sql(
      testEnv,
      `select action from audit_logs where target_type = 'revenue_clawback' and target_id = $1 order by id`,
      [clawback!.id],
    );
    expect(audit).toEqual([{ action: 'clawback.booked' }, { action: 'clawback.reversed' }]);
    expect((await listClawbacks('?status=reversed')).map((row) => row.id)).toContain(clawback!.id);
    const reconciliation = await reconcileLedger(database.db);
    expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
  });

  it('answers 404 for an unknown clawback, 400 without a note, 401 without the admin token', async () => {
    expect((await reverse(crypto.randomUUID())).status).toBe(404);
    expect((await call(api(), testEnv, `/v1/admin/clawbacks/${crypto.randomUUID()}/reverse`, { token: adminToken, json: {} })).status).toBe(
      400,
    );
    expect((await call(api(), testEnv, '/v1/admin/clawbacks')).status).toBe(401);
  });
});

function units(value: string): bigint {
  const negative = value.startsWith('-');
  const digits = BigInt(value.replace('-', '').replace('.', ''));
  return negative ? -digits : digits;
}

function expectedSpent(amount: string, balanceBefore: string): string {
  const held = units(balanceBefore) < 0n ? 0n : units(balanceBefore);
  const covered = held < units(amount) ? held : units(amount);
  const result = units(amount) - covered;
  return `${result / 100_000_000n}.${(result % 100_000_000n).toString().padStart(8, '0')}`;
}
