import { beforeAll, describe, expect, it } from 'vitest';
import { signStripePayload } from '../../../../scripts/lib/stripe-events.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { openLedgerDatabase } from '../../../test/ledger-kit.ts';
import { completedEvent, createPendingCheckout, deliver, paymentState } from '../../../test/payments-kit.ts';
import { createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('POST /v1/webhooks/stripe: signature', () => {
  it('refuses a missing, wrong, stale or tampered signature with 400 and changes nothing', async () => {
    const checkout = await createPendingCheckout(testEnv);
    const before = await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId);
    const event = completedEvent(checkout.stripeSessionId, checkout.amountCents);
    const payload = JSON.stringify(event);
    const stale = Math.floor(Date.now() / 1000) - 301;
    const attempts = [
      await deliver(testEnv, payload, null),
      await deliver(testEnv, payload, 'garbage'),
      await deliver(testEnv, payload, await signStripePayload(payload, 'whsec_not_the_secret')),
      await deliver(testEnv, payload, await signStripePayload(payload, testEnv.STRIPE_WEBHOOK_SECRET as string, stale)),
      await deliver(
        testEnv,
        payload.replace(`"amount_total":${checkout.amountCents}`, '"amount_total":999999'),
        await signStripePayload(payload, testEnv.STRIPE_WEBHOOK_SECRET as string),
      ),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(400);
      expect(attempt.body.error?.code).toBe('invalid_request');
    }
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toEqual(before);
    expect(before.status).toBe('pending');
  });
});

describe('POST /v1/webhooks/stripe: checkout.session.completed', () => {
  it('credits the wallet of a matching pending session once and records event, session and top-up together', async () => {
    const checkout = await createPendingCheckout(testEnv, '25.00000000');
    const result = await deliver(testEnv, completedEvent(checkout.stripeSessionId, 2500));
    expect(result).toEqual({ status: 200, body: { received: true, credited: true, outcome: 'credited' } });
    const state = await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId);
    expect(state).toMatchObject({ balance: '25.00000000', status: 'completed', top_ups: 1 });
    expect(state.completed_at).not.toBeNull();
    const [audit] = await sql(
      testEnv,
      `select action from audit_logs where action = 'checkout.credited' and target_id =
      (select id::text from checkout_sessions where stripe_session_id = $1)`,
      [checkout.stripeSessionId],
    );
    expect(audit).toEqual({ action: 'checkout.credited' });
  });

  it('credits once when one event is delivered 20 times, 10 of them concurrently; the ledger reconciles', async () => {
    const checkout = await createPendingCheckout(testEnv, '12.34000000');
    const event = completedEvent(checkout.stripeSessionId, 1234);
    const sequential = [];
    for (let i = 0; i < 5; i++) sequential.push(await deliver(testEnv, event));
    const concurrent = await Promise.all(Array.from({ length: 10 }, () => deliver(testEnv, event)));
    for (let i = 0; i < 5; i++) sequential.push(await deliver(testEnv, event));
    const all = [...sequential, ...concurrent];
    expect(all.every((delivery) => delivery.status === 200)).toBe(true);
    expect(all.filter((delivery) => delivery.body.credited)).toHaveLength(1);
    expect(all.filter((delivery) => delivery.body.outcome === 'duplicate_event')).toHaveLength(19);
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({
      balance: '12.34000000',
      status: 'completed',
      top_ups: 1,
    });
    const database = openLedgerDatabase(testEnv, 4);
    try {
      const reconciliation = await reconcileLedger(database.db);
      expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
    } finally {
      await database.close();
    }
  });

  it('credits once when different events for one session arrive concurrently or out of order', async () => {
    const checkout = await createPendingCheckout(testEnv, '5.00000000');
    const events = [
      ...Array.from({ length: 6 }, () => completedEvent(checkout.stripeSessionId, 500)),
      ...Array.from({ length: 4 }, () =>
        completedEvent(checkout.stripeSessionId, 500, {}, { type: 'checkout.session.async_payment_succeeded' }),
      ),
    ];
    const results = await Promise.all(events.map((event) => deliver(testEnv, event)));
    expect(results.filter((result) => result.body.credited)).toHaveLength(1);
    expect(results.filter((result) => result.body.outcome === 'already_completed')).toHaveLength(9);
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ balance: '5.00000000', top_ups: 1 });
  });

  it('waits for an async payment: an unpaid completion credits nothing, the later success credits', async () => {
    const checkout = await createPendingCheckout(testEnv, '7.00000000');
    const unpaid = await deliver(testEnv, completedEvent(checkout.stripeSessionId, 700, { payment_status: 'unpaid' }));
    expect(unpaid.body).toMatchObject({ credited: false, outcome: 'payment_not_completed' });
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({
      balance: '0.00000000',
      status: 'pending',
    });
    const paid = await deliver(
      testEnv,
      completedEvent(checkout.stripeSessionId, 700, {}, { type: 'checkout.session.async_payment_succeeded' }),
    );
    expect(paid.body).toMatchObject({ credited: true });
  });

  it('acknowledges an event for an unknown session without writing anything', async () => {
    const before = await sql(
      testEnv,
      'select (select count(*) from processed_webhook_events) as events, (select count(*) from ledger_transactions) as transactions',
    );
    const result = await deliver(testEnv, completedEvent('cs_test_never_created', 2500));
    expect(result).toEqual({ status: 200, body: { received: true, credited: false, outcome: 'unknown_session' } });
    expect(
      await sql(
        testEnv,
        'select (select count(*) from processed_webhook_events) as events, (select count(*) from ledger_transactions) as transactions',
      ),
    ).toEqual(before);
  });

  it('credits nothing when the amount or currency differs from the pending session', async () => {
    const checkout = await createPendingCheckout(testEnv, '10.00000000');
    expect((await deliver(testEnv, completedEvent(checkout.stripeSessionId, 100000))).body).toMatchObject({
      credited: false,
      outcome: 'amount_mismatch',
    });
    expect((await deliver(testEnv, completedEvent(checkout.stripeSessionId, 1000, { currency: 'eur' }))).body).toMatchObject({
      credited: false,
      outcome: 'amount_mismatch',
    });
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({
      balance: '0.00000000',
      status: 'pending',
      top_ups: 0,
    });
  });

  it('acknowledges and ignores other event types and live-mode events', async () => {
    const checkout = await createPendingCheckout(testEnv, '3.00000000');
    const other = await deliver(testEnv, completedEvent(checkout.stripeSessionId, 300, {}, { type: 'checkout.session.expired' }));
    expect(other).toEqual({ status: 200, body: { received: true, credited: false, outcome: 'ignored' } });
    const customer = await deliver(testEnv, {
      id: 'evt_customer',
      object: 'event',
      type: 'customer.created',
      livemode: false,
      data: { object: { id: 'cus_1' } },
    });
    expect(customer.body).toMatchObject({ received: true, credited: false, outcome: 'ignored' });
    const live = await deliver(testEnv, completedEvent(checkout.stripeSessionId, 300, {}, { livemode: true }));
    expect(live.body).toMatchObject({ credited: false, outcome: 'livemode_refused' });
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ status: 'pending', top_ups: 0 });
  });

  it('acknowledges a completed session that charged nothing (setup mode) without a credit', async () => {
    const result = await deliver(
      testEnv,
      completedEvent('cs_test_setup_mode', 0, { amount_total: null, currency: null, mode: 'setup', payment_status: 'no_payment_required' }),
    );
    expect(result).toEqual({ status: 200, body: { received: true, credited: false, outcome: 'ignored' } });
  });

  it('refuses a signed event that carries no checkout session with 400', async () => {
    const result = await deliver(testEnv, {
      id: 'evt_bad',
      object: 'event',
      type: 'checkout.session.completed',
      livemode: false,
      data: { object: { id: 7 } },
    });
    expect(result.status).toBe(400);
  });
});
