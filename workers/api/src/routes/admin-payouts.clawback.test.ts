/**
 * A payout whose reservation a clawback ate (a chargeback of money the developer had earned landed
 * after the run): it can no longer be paid (402, nothing moves), the operator can still close it,
 * whether it is pending or already approved, and the next run pays only what is left.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { disputeEvent, randomStripeId } from '../../../../scripts/lib/stripe-events.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { getWalletBalance } from '#shared/ledger/wallet-balance.ts';
import { formatUsd } from '#shared/money/index.ts';
import { chargeOf, fund, openLedgerDatabase, type LedgerTestDatabase, expectReconciledAndAudited } from '../../../test/ledger-kit.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
  return () => database.close();
});

interface Payout {
  id: string;
  wallet_id: string;
  amount_usd: string;
  status: string;
}

const admin = (path: string, json?: unknown) =>
  call(api(), testEnv, path, { method: 'POST', token: adminToken, ...(json === undefined ? {} : { json }) });
const approve = (id: string) => admin(`/v1/admin/payouts/${id}/approve`, { operator_note: 'checked' });
const markPaid = (id: string) => admin(`/v1/admin/payouts/${id}/mark-paid`);
const cancel = (id: string) => admin(`/v1/admin/payouts/${id}/cancel`, { operator_note: 'chargeback ate it' });
const reject = (id: string) => admin(`/v1/admin/payouts/${id}/reject`, { operator_note: 'chargeback ate it' });
const units = (value: string) => BigInt(value.replace('.', ''));

async function wallet(walletId: string) {
  const balance = (await getWalletBalance(database.db, walletId))!;
  return { balance: formatUsd(balance.balanceUsd), available: formatUsd(balance.availableUsd) };
}

/** What a payout has moved: its status, its hold, its ledger transactions. */
async function payoutState(id: string) {
  const [row] = await sql<{ status: string; hold: string; payouts: number; transitions: string[] }>(
    testEnv,
    `select (select status from payouts where id = $1) as status,
            (select string_agg(status, ',') from balance_holds where request_id = 'payout:' || $1::text) as hold,
            (select count(*)::int from ledger_transactions where kind = 'payout' and idempotency_key = 'payout:' || $1::text) as payouts,
            (select array_agg(action order by id) from audit_logs where target_type = 'payout' and target_id = $1::text) as transitions`,
    [id],
  );
  return row!;
}

async function expectError(response: Response, status: number, code: string) {
  expect(response.status, await response.clone().text()).toBe(status);
  expect(((await response.json()) as { error: { code: string } }).error.code).toBe(code);
}

/**
 * The demo developer earns from a user who paid 10 USD and spent 9 (and holds 5 USD besides), gets a
 * pending payout of all of it; `dispute()` then charges the 10 USD back, which claws that revenue back.
 */
async function payoutBeforeAChargeback() {
  const { developer_wallet_id: developerWalletId, app_id: appId } = await demoFixture(testEnv);
  const checkout = await paidCheckout(testEnv, '10.00000000');
  const spent = await bookUsage(database.db, {
    requestId: `spend-${crypto.randomUUID()}`,
    appId,
    endUserId: checkout.endUserId,
    featureKey: 'chat',
    rated: chargeOf('9.00000000'),
  });
  expect(spent.outcome).toBe('booked');
  await fund(database, developerWalletId, '5.00000000');
  const run = await admin('/v1/admin/payouts/run-mock', { threshold_usd: '0.00000001' });
  const payout = ((await run.json()) as { data: Payout[] }).data.find((row) => row.wallet_id === developerWalletId);
  if (!payout) throw new Error('no payout for the demo developer');
  const dispute = async () => {
    const event = disputeEvent({
      id: randomStripeId('dp'),
      charge: checkout.chargeId,
      payment_intent: checkout.paymentIntentId,
      amount: 1000,
    });
    expect((await deliver(testEnv, event)).body.outcome).toBe('chargeback_booked');
    const [clawback] = await sql<{ amount: string }>(testEnv, 'select amount::text from revenue_clawbacks where user_wallet_id = $1', [
      checkout.walletId,
    ]);
    expect(clawback).toBeDefined();
    return clawback!.amount;
  };
  return { payout, developerWalletId, dispute };
}

describe('a payout whose reservation a clawback ate', () => {
  it('approved: mark-paid is refused with 402 and moves nothing; cancel closes it and releases the hold once', async () => {
    const { payout, developerWalletId, dispute } = await payoutBeforeAChargeback();
    expect((await approve(payout.id)).status).toBe(200);
    const clawedBack = await dispute();
    const left = await wallet(developerWalletId);
    expect(units(left.balance)).toBe(units(payout.amount_usd) - units(clawedBack));
    expect(units(left.balance)).toBeGreaterThan(0n);

    await expectError(await markPaid(payout.id), 402, 'insufficient_balance');
    expect(await payoutState(payout.id)).toMatchObject({ status: 'processing', hold: 'active', payouts: 0 });
    expect(await wallet(developerWalletId)).toEqual(left);

    // Twice at once: one closes, the other finds it closed (the documented idempotent repeat).
    const closes = await Promise.all([cancel(payout.id), cancel(payout.id)]);
    expect(closes.map((response) => response.status)).toEqual([200, 200]);
    expect(await payoutState(payout.id)).toEqual({
      status: 'cancelled',
      hold: 'released',
      payouts: 0,
      transitions: ['payout.created', 'payout.approved', 'payout.cancelled'],
    });
    await expectError(await markPaid(payout.id), 409, 'invalid_state');
    await expectError(await reject(payout.id), 409, 'invalid_state');
    // What the clawback left is available again, and a new run pays that, not the old amount.
    expect(await wallet(developerWalletId)).toEqual({ balance: left.balance, available: left.balance });
    const rerun = await admin('/v1/admin/payouts/run-mock', { threshold_usd: '0.00000001' });
    const again = ((await rerun.json()) as { data: Payout[] }).data.find((row) => row.wallet_id === developerWalletId);
    expect(again?.amount_usd).toBe(left.balance);
    expect((await reject(again!.id)).status).toBe(200);
    await expectReconciledAndAudited(testEnv);
  });

  it('pending: mark-paid is 409 before approval; reject closes it and releases the hold', async () => {
    const { payout, developerWalletId, dispute } = await payoutBeforeAChargeback();
    await dispute();
    await expectError(await markPaid(payout.id), 409, 'invalid_state');
    expect((await reject(payout.id)).status).toBe(200);
    expect(await payoutState(payout.id)).toMatchObject({ status: 'rejected', hold: 'released', payouts: 0 });
    const { balance } = await wallet(developerWalletId);
    expect(await wallet(developerWalletId)).toEqual({ balance, available: balance });
    await expectReconciledAndAudited(testEnv);
  });

  it('mark-paid racing the chargeback that claws the revenue back: paid with a receivable left, or 402 and closable', async () => {
    for (let round = 0; round < 4; round++) {
      const { payout, developerWalletId, dispute } = await payoutBeforeAChargeback();
      expect((await approve(payout.id)).status).toBe(200);
      const [paid, clawedBack] = await Promise.all([markPaid(payout.id), dispute()]);
      if (paid.status === 200) {
        expect(await payoutState(payout.id)).toMatchObject({ status: 'paid', hold: 'settled', payouts: 1 });
        // Paid in full before the clawback: the developer owes the clawback.
        expect(await wallet(developerWalletId)).toEqual({ balance: `-${clawedBack}`, available: '0.00000000' });
        await fund(database, developerWalletId, clawedBack); // settled, so the next round starts from zero
      } else {
        await expectError(paid, 402, 'insufficient_balance');
        expect(await payoutState(payout.id)).toMatchObject({ status: 'processing', hold: 'active', payouts: 0 });
        expect((await reject(payout.id)).status).toBe(200);
        expect(await payoutState(payout.id)).toMatchObject({ status: 'rejected', hold: 'released', payouts: 0 });
        // The left-over stays with the developer; the run pays it (closed again to leave the next round a clean wallet).
        const rerun = await admin('/v1/admin/payouts/run-mock', { threshold_usd: '0.00000001' });
        const again = ((await rerun.json()) as { data: Payout[] }).data.find((row) => row.wallet_id === developerWalletId);
        expect(units(again!.amount_usd)).toBe(units(payout.amount_usd) - units(clawedBack));
        expect((await approve(again!.id)).status).toBe(200);
        expect((await markPaid(again!.id)).status).toBe(200);
      }
    }
    await expectReconciledAndAudited(testEnv);
  });

  it('an approved payout still covered cannot be cancelled (409); covered again by new revenue it is paid in full', async () => {
    const { payout, developerWalletId, dispute } = await payoutBeforeAChargeback();
    expect((await approve(payout.id)).status).toBe(200);
    await expectError(await cancel(payout.id), 409, 'invalid_state');
    const clawedBack = await dispute();
    await expectError(await markPaid(payout.id), 402, 'insufficient_balance');
    // The developer earns the clawed-back amount again: the payout is covered, so it is paid, not closed.
    await fund(database, developerWalletId, clawedBack);
    await expectError(await reject(payout.id), 409, 'invalid_state');
    expect((await markPaid(payout.id)).status).toBe(200);
    expect(await payoutState(payout.id)).toMatchObject({ status: 'paid', hold: 'settled', payouts: 1 });
    expect(await wallet(developerWalletId)).toEqual({ balance: '0.00000000', available: '0.00000000' });
    await expectReconciledAndAudited(testEnv);
  });
});
