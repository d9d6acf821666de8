/**
 * A clawback never exceeds what the developer earned from that end user, less what is already clawed
 * back and not reversed — enforced where the booking is written (faucet_book_clawback), so a caller
 * that computes a wrong amount, a redelivery, a race or a refund and a dispute of one charge cannot
 * pass it. Reconciliation lists an end user whose clawbacks exceed it (a past wrong booking).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { chargeRefundedEvent, disputeEvent, randomStripeId } from '../../../../scripts/lib/stripe-events.ts';
import { formatUsd, parseWireAmount, subtractUsd } from '#shared/money/index.ts';
import {
  chargeOf,
  openLedgerDatabase,
  type LedgerTestDatabase,
  expectReconciledAndAudited,
  spendWithDemoDeveloper,
} from '../../../test/ledger-kit.ts';
import { deliver, paidCheckout, reversalState } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 8);
  return () => database.close();
});

const spend = (user: { endUserId: string }, retail: string) => spendWithDemoDeveloper(database, testEnv, user.endUserId, chargeOf(retail));

const earnedFrom = async (endUserId: string) =>
  (
    await sql<{ earned: string }>(
      testEnv,
      'select coalesce(sum(developer_revenue_usd), 0)::numeric(20, 8)::text as earned from usage_events where end_user_id = $1',
      [endUserId],
    )
  )[0]!.earned;

const clawedFrom = async (walletId: string) =>
  (
    await sql<{ clawed: string }>(
      testEnv,
      `select coalesce(sum(amount), 0)::numeric(20, 8)::text as clawed from revenue_clawbacks
       where user_wallet_id = $1 and status = 'booked'`,
      [walletId],
    )
  )[0]!.clawed;

/** A source booking a clawback can name: a receivable debit of the user's wallet, as a chargeback writes. */
async function chargebackSource(walletId: string, amount = '0.00000001') {
  const [row] = await sql<{ transaction_id: string }>(
    testEnv,
    `select transaction_id from faucet_post_receivable_debit('chargeback', $1, null, 'test chargeback', '{}'::jsonb,
       $2::uuid, faucet_system_wallet('payment_clearing'), $3::numeric)`,
    [`test-source-${crypto.randomUUID()}`, walletId, amount],
  );
  return row!.transaction_id;
}

/** faucet_book_clawback as a caller that computed a wildly wrong amount (the seed's 83,332.75). */
const bookClawback = async (source: string, walletId: string, amount: string) =>
  (
    await sql<{ outcome: string; amount: string | null }>(
      testEnv,
      `select outcome, amount::numeric(20, 8)::text as amount
       from faucet_book_clawback($1::uuid, $2::uuid, 999993, 0.0000048, 0.0000576, $3::numeric, 'test')`,
      [source, walletId, amount],
    )
  )[0]!;

const reverse = (id: string) =>
  call(api(), testEnv, `/v1/admin/clawbacks/${id}/reverse`, { token: adminToken, json: { note: 'review: booked in excess' } });

describe('faucet_book_clawback: never more than the developer earned from the end user', () => {
  it('caps an absurd amount at the revenue earned, then books nothing more until a reversal frees room', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '3.00000000');
    const earned = await earnedFrom(checkout.endUserId);
    expect(earned).not.toBe('0.00000000');

    const first = await bookClawback(await chargebackSource(checkout.walletId), checkout.walletId, '83332.75000000');
    expect(first).toEqual({ outcome: 'booked', amount: earned });
    expect(await clawedFrom(checkout.walletId)).toBe(earned);

    const second = await bookClawback(await chargebackSource(checkout.walletId), checkout.walletId, '1.00000000');
    expect(second).toEqual({ outcome: 'nothing_to_claw_back', amount: null });
    expect(await clawedFrom(checkout.walletId)).toBe(earned);

    const [clawback] = await sql<{ id: string }>(testEnv, 'select id from revenue_clawbacks where user_wallet_id = $1', [
      checkout.walletId,
    ]);
    expect((await reverse(clawback!.id)).status).toBe(200);
    const third = await bookClawback(await chargebackSource(checkout.walletId), checkout.walletId, '0.00000002');
    expect(third).toEqual({ outcome: 'booked', amount: '0.00000002' });
    await expectReconciledAndAudited(testEnv);
  });

  it('books at most the revenue when clawbacks of one end user race', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '2.00000000');
    const earned = await earnedFrom(checkout.endUserId);
    const sources = await Promise.all(Array.from({ length: 6 }, () => chargebackSource(checkout.walletId)));
    const results = await Promise.all(sources.map((source) => bookClawback(source, checkout.walletId, earned)));
    expect(results.filter((result) => result.outcome === 'booked')).toHaveLength(1);
    expect(await clawedFrom(checkout.walletId)).toBe(earned);
    await expectReconciledAndAudited(testEnv);
  });

  it('keeps the sum at the revenue through a refund that grows and a dispute of the same charge', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '9.00000000');
    const earned = await earnedFrom(checkout.endUserId);
    const refund = (cents: number) =>
      chargeRefundedEvent({ id: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 1000, amount_refunded: cents });
    expect((await deliver(testEnv, refund(500))).body.outcome).toBe('refund_booked');
    expect((await deliver(testEnv, refund(1000))).body.outcome).toBe('refund_booked');
    // The bank takes the whole charge again: the checkout credited 10 USD and the refunds took them all.
    const dispute = { id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 1000 };
    expect((await deliver(testEnv, disputeEvent(dispute))).body.outcome).toBe('nothing_to_book');
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '-9.00000000', refunds: 2, chargebacks: 0 });
    const [capped] = await sql<{ metadata: { asked_cents: number; booked_cents: number } }>(
      testEnv,
      "select metadata from audit_logs where action = 'stripe.reversal_capped' and metadata ->> 'event_id' is not null order by created_at desc limit 1",
    );
    expect(capped!.metadata).toMatchObject({ asked_cents: 1000, booked_cents: 0 });
    // Winning a dispute that debited nothing credits nothing back.
    const won = await deliver(testEnv, disputeEvent({ ...dispute, status: 'won' }, { type: 'charge.dispute.closed' }));
    expect(won.body.outcome).toBe('nothing_to_book');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('-9.00000000');
    expect(await clawedFrom(checkout.walletId)).toBe(earned);
    await expectReconciledAndAudited(testEnv);
  });

  it('books a dispute after a partial refund only up to what the checkout still credited, and a win gives back exactly that', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    const refunded = chargeRefundedEvent({
      id: checkout.chargeId,
      payment_intent: checkout.paymentIntentId,
      amount: 1000,
      amount_refunded: 700,
    });
    expect((await deliver(testEnv, refunded)).body.outcome).toBe('refund_booked');
    const dispute = { id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 1000 };
    expect((await deliver(testEnv, disputeEvent(dispute))).body.outcome).toBe('chargeback_booked');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('0.00000000');
    const won = await deliver(testEnv, disputeEvent({ ...dispute, status: 'won' }, { type: 'charge.dispute.closed' }));
    expect(won.body.outcome).toBe('chargeback_reversed');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('3.00000000');
    await expectReconciledAndAudited(testEnv);
  });
});

describe('GET /v1/admin/reconciliation/ledger: clawbacks in excess of what was earned', () => {
  it('lists an end user whose booked clawbacks exceed the revenue from them, until the operator reverses them', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '1.00000000');
    const earned = await earnedFrom(checkout.endUserId);
    // A wrong booking from before the cap: written around faucet_book_clawback, as the old code could.
    const source = await chargebackSource(checkout.walletId);
    const [wrong] = await sql<{ id: string }>(
      testEnv,
      `with debit as (
         select transaction_id from faucet_post_receivable_debit('revenue_clawback', 'clawback:' || $1, null, 'old clawback',
           '{}'::jsonb, faucet_developer_wallet_of_app($3::uuid), faucet_system_wallet('platform_adjustments'), 83332.75))
       insert into revenue_clawbacks (source_transaction_id, source_kind, user_wallet_id, developer_id, developer_wallet_id,
         spent_usd, developer_revenue_basis_usd, retail_basis_usd, amount, ledger_transaction_id)
       select $1::uuid, 'chargeback', $2::uuid, a.developer_id, faucet_developer_wallet_of_app(a.id), 999993, 0.0000048, 0.0000576,
         83332.75, debit.transaction_id from debit, apps a where a.id = $3::uuid
       returning id`,
      [source, checkout.walletId, (await demoFixture(testEnv)).app_id],
    );
    const report = async () => {
      const response = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
      expect(response.status).toBe(200);
      return (await response.json()) as {
        ok: boolean;
        excess_clawbacks: { user_wallet_id: string; excess_usd: string; clawback_ids: string[] }[];
      };
    };
    const before = await report();
    expect(before.ok).toBe(false);
    const [row] = before.excess_clawbacks.filter((excess) => excess.user_wallet_id === checkout.walletId);
    expect(row).toMatchObject({
      clawback_ids: [wrong!.id],
      earned_usd: earned,
      clawed_back_usd: '83332.75000000',
      excess_usd: formatUsd(subtractUsd(parseWireAmount('83332.75000000'), parseWireAmount(earned))),
    });

    expect((await reverse(wrong!.id)).status).toBe(200);
    const after = await report();
    expect(after.excess_clawbacks).toEqual([]);
    await expectReconciledAndAudited(testEnv);
  });
});
