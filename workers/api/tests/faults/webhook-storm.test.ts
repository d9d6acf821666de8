/**
 * A webhook storm: Stripe redelivering every completion many times at once, a second crediting event
 * type for the same sessions, forged and stale signatures, unknown sessions, wrong amounts and
 * unrelated events, all concurrently. Each paid session is credited exactly once, nothing else
 * moves money, every answer is a receipt or the envelope, and the ledger reconciles.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { randomStripeId, signStripePayload } from '../../../../scripts/lib/stripe-events.ts';
import { completedEvent, createPendingCheckout, deliver } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('webhook storm', () => {
  it('credits each paid session exactly once under concurrent redeliveries and hostile events; books reconcile', async () => {
    const checkouts = await Promise.all(Array.from({ length: 8 }, (_, index) => createPendingCheckout(testEnv, `${index + 1}.00000000`)));
    const [before] = await sql<{ clearing: string }>(
      testEnv,
      `select balance::text as clearing from wallets where kind = 'payment_clearing'`,
    );

    const deliveries: Array<Promise<{ status: number; body: { credited?: boolean; error?: { code: string } } }>> = [];
    for (const checkout of checkouts) {
      const completed = completedEvent(checkout.stripeSessionId, checkout.amountCents);
      const asyncSucceeded = completedEvent(
        checkout.stripeSessionId,
        checkout.amountCents,
        {},
        { type: 'checkout.session.async_payment_succeeded' },
      );
      for (let copy = 0; copy < 6; copy++) deliveries.push(deliver(testEnv, completed));
      deliveries.push(deliver(testEnv, asyncSucceeded), deliver(testEnv, asyncSucceeded));
      // Hostile or irrelevant: must move nothing.
      deliveries.push(deliver(testEnv, completedEvent(checkout.stripeSessionId, checkout.amountCents * 10)));
      deliveries.push(deliver(testEnv, completed, await signStripePayload(JSON.stringify(completed), 'whsec_forged')));
      deliveries.push(
        deliver(testEnv, completed, await signStripePayload(JSON.stringify(completed), testEnv.STRIPE_WEBHOOK_SECRET as string, 1_000_000)),
      );
      deliveries.push(deliver(testEnv, completed, null));
      deliveries.push(deliver(testEnv, completedEvent(randomStripeId('cs_test'), checkout.amountCents)));
      deliveries.push(deliver(testEnv, completedEvent(checkout.stripeSessionId, checkout.amountCents, {}, { type: 'charge.refunded' })));
    }
    const answers = await Promise.all(deliveries);

    for (const answer of answers) {
      expect(answer.status).not.toBeGreaterThanOrEqual(500);
      if (answer.status !== 200) expect(answer.body.error?.code).toBe('invalid_request');
    }
    expect(answers.filter((answer) => answer.body.credited === true)).toHaveLength(checkouts.length);

    for (const checkout of checkouts) {
      const [row] = await sql<{ balance: string; paid: string; top_ups: number; status: string }>(
        testEnv,
        `select (select balance::text from wallets where id = $1) as balance, ($3::numeric / 100)::numeric(20,8)::text as paid,
                (select count(*)::int from ledger_transactions where kind = 'top_up' and idempotency_key = 'checkout:' || $2) as top_ups,
                (select status from checkout_sessions where stripe_session_id = $2) as status`,
        [checkout.walletId, checkout.stripeSessionId, checkout.amountCents],
      );
      expect(row).toEqual({ balance: row!.paid, paid: row!.paid, top_ups: 1, status: 'completed' });
    }
    const [after] = await sql<{ moved: string }>(
      testEnv,
      `select ($1::numeric - balance)::numeric(20,8)::text as moved from wallets where kind = 'payment_clearing'`,
      [before!.clearing],
    );
    expect(after!.moved).toBe('36.00000000');

    const reconciliation = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    expect(((await reconciliation.json()) as { ok: boolean }).ok).toBe(true);
  });
});
