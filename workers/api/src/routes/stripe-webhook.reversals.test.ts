import { beforeAll, describe, expect, it } from 'vitest';
import { chargeRefundedEvent, disputeEvent, randomStripeId } from '../../../../scripts/lib/stripe-events.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { chargeOf, openLedgerDatabase, type LedgerTestDatabase } from '../../../test/ledger-kit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { deliver, paidCheckout, reversalState } from '../../../test/payments-kit.ts';
import { createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 12);
  return () => database.close();
});

/** The user of a paid checkout spends `amount` on one call (retail exactly `amount`). */
async function spend(checkout: { endUserId: string }, amount: string) {
  const { app_id: appId } = await demoFixture(testEnv);
  const booked = await bookUsage(database.db, {
    requestId: `spend-${crypto.randomUUID()}`,
    appId,
    endUserId: checkout.endUserId,
    featureKey: 'chat',
    rated: chargeOf(amount),
  });
  expect(booked.outcome).toBe('booked');
}

async function expectReconciled() {
  const reconciliation = await reconcileLedger(database.db);
  expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
  return reconciliation;
}

const refund = (checkout: { chargeId: string; paymentIntentId: string; amountCents: number }, refundedCents: number, eventId?: string) =>
  chargeRefundedEvent(
    { id: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: checkout.amountCents, amount_refunded: refundedCents },
    eventId ? { eventId } : {},
  );

describe('POST /v1/webhooks/stripe: charge.refunded', () => {
  it('books a refund of money already spent, taking the wallet below zero as a receivable', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '6.00000000');
    const result = await deliver(testEnv, refund(checkout, 1000));
    expect(result).toEqual({ status: 200, body: { received: true, credited: false, outcome: 'refund_booked' } });
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({
      balance: '-6.00000000',
      receivable: true,
      receivables: '6.00000000',
      refunds: 1,
    });
    const reconciliation = await expectReconciled();
    expect(reconciliation.receivables).toContainEqual({
      wallet_id: checkout.walletId,
      kind: 'user',
      outstanding_usd: '6.00000000',
      recorded_usd: '6.00000000',
    });
  });

  it('books partial refunds as the increase of the cumulative refunded amount, once per amount', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    expect((await deliver(testEnv, refund(checkout, 300))).body.outcome).toBe('refund_booked');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('7.00000000');
    expect((await deliver(testEnv, refund(checkout, 750))).body.outcome).toBe('refund_booked');
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '2.50000000', refunds: 2, receivable: false });
    // A second event (new id) reporting a total already booked, or an older lower total, books nothing.
    expect((await deliver(testEnv, refund(checkout, 750))).body.outcome).toBe('nothing_to_book');
    expect((await deliver(testEnv, refund(checkout, 300))).body.outcome).toBe('nothing_to_book');
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '2.50000000', refunds: 2 });
    await expectReconciled();
  });

  it('debits once when one refund event is delivered 12 times, 8 of them concurrently', async () => {
    const checkout = await paidCheckout(testEnv, '5.00000000');
    const event = refund(checkout, 500);
    const first = await deliver(testEnv, event);
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => deliver(testEnv, event)));
    const later = [await deliver(testEnv, event), await deliver(testEnv, event), await deliver(testEnv, event)];
    expect(first.body.outcome).toBe('refund_booked');
    for (const delivery of [...concurrent, ...later]) expect(delivery).toMatchObject({ status: 200, body: { outcome: 'duplicate_event' } });
    // Different events with the same cumulative total, concurrently: still one debit.
    const checkout2 = await paidCheckout(testEnv, '5.00000000');
    const racing = await Promise.all(Array.from({ length: 6 }, () => deliver(testEnv, refund(checkout2, 200))));
    expect(racing.filter((delivery) => delivery.body.outcome === 'refund_booked')).toHaveLength(1);
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '0.00000000', refunds: 1 });
    expect(await reversalState(testEnv, checkout2.walletId)).toMatchObject({ balance: '3.00000000', refunds: 1 });
    await expectReconciled();
  });

  it('acknowledges a refund of an unknown charge with 200, records it and moves no money', async () => {
    const before = await sql(testEnv, `select (select count(*) from ledger_transactions) as transactions`);
    const event = chargeRefundedEvent({
      id: randomStripeId('ch'),
      payment_intent: randomStripeId('pi'),
      amount: 900,
      amount_refunded: 900,
    });
    const result = await deliver(testEnv, event);
    expect(result).toEqual({ status: 200, body: { received: true, credited: false, outcome: 'unknown_charge' } });
    expect(await sql(testEnv, `select (select count(*) from ledger_transactions) as transactions`)).toEqual(before);
    expect(await sql(testEnv, 'select type from processed_webhook_events where event_id = $1', [event.id])).toEqual([
      { type: 'charge.refunded' },
    ]);
    const audit = await sql(testEnv, `select action from audit_logs where action = 'stripe.unknown_charge' and target_id = $1`, [
      event.data.object.id,
    ]);
    expect(audit).toHaveLength(1);
  });

  it('refuses to book a refund above what the session paid', async () => {
    const checkout = await paidCheckout(testEnv, '2.00000000');
    const result = await deliver(testEnv, refund(checkout, 20000));
    expect(result.body.outcome).toBe('amount_mismatch');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('2.00000000');
  });
});

describe('POST /v1/webhooks/stripe: charge.dispute.*', () => {
  it('books a dispute as a chargeback below zero, and a won dispute credits it back and returns the clawback', async () => {
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spend(checkout, '8.00000000');
    const dispute = { id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 1000 };
    const created = disputeEvent(dispute);
    expect((await deliver(testEnv, created)).body).toEqual({ received: true, credited: false, outcome: 'chargeback_booked' });
    expect((await deliver(testEnv, created)).body.outcome).toBe('duplicate_event');
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '-8.00000000', chargebacks: 1, clawbacks: 1 });
    const [clawback] = await sql<{ status: string; developer_wallet_id: string; amount: string }>(
      testEnv,
      'select status, developer_wallet_id, amount::text from revenue_clawbacks where user_wallet_id = $1',
      [checkout.walletId],
    );
    expect(clawback!.status).toBe('booked');
    await expectReconciled();

    const won = disputeEvent({ ...dispute, status: 'won' }, { type: 'charge.dispute.closed' });
    const results = await Promise.all([
      deliver(testEnv, won),
      deliver(testEnv, won),
      deliver(testEnv, disputeEvent({ ...dispute, status: 'won' }, { type: 'charge.dispute.closed' })),
    ]);
    expect(results.filter((result) => result.body.outcome === 'chargeback_reversed')).toHaveLength(1);
    expect(results.find((result) => result.body.outcome === 'chargeback_reversed')!.body.credited).toBe(true);
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '2.00000000', chargebacks: 1, reversals: 1 });
    const [after] = await sql<{ status: string }>(testEnv, 'select status from revenue_clawbacks where user_wallet_id = $1', [
      checkout.walletId,
    ]);
    expect(after!.status).toBe('reversed');
    await expectReconciled();
  });

  it('a lost dispute needs nothing more: the chargeback stays, nothing else is booked', async () => {
    const checkout = await paidCheckout(testEnv, '3.00000000');
    const dispute = { id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 300 };
    await deliver(testEnv, disputeEvent(dispute));
    const lost = await deliver(testEnv, disputeEvent({ ...dispute, status: 'lost' }, { type: 'charge.dispute.closed' }));
    expect(lost).toMatchObject({ status: 200, body: { credited: false, outcome: 'ignored' } });
    expect(await reversalState(testEnv, checkout.walletId)).toMatchObject({ balance: '0.00000000', chargebacks: 1, reversals: 0 });
  });

  it('finds the wallet by the charge when the dispute names no payment intent, after a refund recorded it', async () => {
    const checkout = await paidCheckout(testEnv, '4.00000000');
    await deliver(testEnv, refund(checkout, 100));
    const result = await deliver(
      testEnv,
      disputeEvent({ id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: null, amount: 300 }),
    );
    expect(result.body.outcome).toBe('chargeback_booked');
    expect((await reversalState(testEnv, checkout.walletId)).balance).toBe('0.00000000');
  });
});
