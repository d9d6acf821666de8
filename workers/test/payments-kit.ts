/**
 * Fixtures of the payments tests (imported by tests only): pending checkouts created through the API
 * (and so through the fake Stripe), signed webhook deliveries, and the state worth asserting on.
 */
import {
  checkoutSessionEvent,
  randomStripeId,
  signStripePayload,
  type CheckoutSessionSnapshot,
  type EventOptions,
} from '../../scripts/lib/stripe-events.ts';
import { api, call, createSession, sql, type TestEnv } from './harness.ts';

export async function createPendingCheckout(testEnv: TestEnv, amountUsd = '25.00000000') {
  const session = await createSession(testEnv);
  const response = await call(api(), testEnv, '/v1/user/stripe/checkout-sessions', {
    token: session.token,
    json: { amount_usd: amountUsd, return_url: 'https://app.example.test/billing' },
  });
  if (response.status !== 201) throw new Error(`checkout failed: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { checkout_session_id: string; amount_cents: number; url: string };
  return { ...session, stripeSessionId: body.checkout_session_id, amountCents: body.amount_cents, url: body.url };
}

export function completedEvent(
  stripeSessionId: string,
  amountCents: number,
  overrides: Partial<CheckoutSessionSnapshot> = {},
  options: EventOptions = {},
) {
  return checkoutSessionEvent({ id: stripeSessionId, amount_total: amountCents, ...overrides }, options);
}

/** POSTs an event to the webhook, signed with the test secret unless a header is given. */
export async function deliver(testEnv: TestEnv, event: unknown, signature?: string | null) {
  const payload = typeof event === 'string' ? event : JSON.stringify(event);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const header = signature === undefined ? await signStripePayload(payload, testEnv.STRIPE_WEBHOOK_SECRET as string) : signature;
  if (header !== null) headers['stripe-signature'] = header;
  const response = await call(api(), testEnv, '/v1/webhooks/stripe', { method: 'POST', headers, body: payload });
  return {
    status: response.status,
    body: (await response.json()) as { received?: boolean; credited?: boolean; outcome?: string; error?: { code: string } },
  };
}

/** What the webhook may change: the wallet balance, the session, processed events, top-ups. */
export async function paymentState(testEnv: TestEnv, walletId: string, stripeSessionId: string) {
  const [row] = await sql<{ balance: string; status: string; events: number; top_ups: number; completed_at: string | null }>(
    testEnv,
    `select (select balance::text from wallets where id = $1) as balance,
            (select status from checkout_sessions where stripe_session_id = $2) as status,
            (select completed_at from checkout_sessions where stripe_session_id = $2) as completed_at,
            (select count(*)::int from processed_webhook_events) as events,
            (select count(*)::int from ledger_transactions where kind = 'top_up' and idempotency_key = 'checkout:' || $2) as top_ups`,
    [walletId, stripeSessionId],
  );
  return row!;
}

/** A checkout paid through the webhook with a payment intent of its own: the wallet holds its amount. */
export async function paidCheckout(testEnv: TestEnv, amountUsd = '10.00000000') {
  const checkout = await createPendingCheckout(testEnv, amountUsd);
  const paymentIntentId = randomStripeId('pi');
  const chargeId = randomStripeId('ch');
  const credited = await deliver(
    testEnv,
    completedEvent(checkout.stripeSessionId, checkout.amountCents, { payment_intent: paymentIntentId }),
  );
  if (!credited.body.credited) throw new Error(`checkout not credited: ${JSON.stringify(credited.body)}`);
  return { ...checkout, paymentIntentId, chargeId };
}

/** What a refund or chargeback may change: the wallet, its receivables, the debits, the clawbacks. */
export async function reversalState(testEnv: TestEnv, walletId: string) {
  const [row] = await sql<{
    balance: string;
    receivable: boolean;
    receivables: string;
    refunds: number;
    chargebacks: number;
    reversals: number;
    clawbacks: number;
  }>(
    testEnv,
    `select faucet_wallet_balance($1)::text as balance,
            (select receivable from wallets where id = $1) as receivable,
            (select coalesce(sum(amount), 0)::numeric(20, 8)::text from receivables where wallet_id = $1) as receivables,
            (select count(*)::int from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
              where e.wallet_id = $1 and t.kind = 'refund') as refunds,
            (select count(*)::int from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
              where e.wallet_id = $1 and t.kind = 'chargeback') as chargebacks,
            (select count(*)::int from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
              where e.wallet_id = $1 and t.kind = 'chargeback_reversal') as reversals,
            (select count(*)::int from revenue_clawbacks where user_wallet_id = $1) as clawbacks`,
    [walletId],
  );
  return row!;
}
