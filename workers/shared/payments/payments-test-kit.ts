/**
 * Fixtures of the payments tests (imported by tests only): pending checkouts created through the API
 * (and so through the fake Stripe), signed webhook deliveries, and the state worth asserting on.
 */
import { checkoutSessionEvent, signStripePayload, type CheckoutSessionSnapshot, type EventOptions } from '../../../scripts/lib/stripe-events.ts';
import { api, call, createSession, sql, type TestEnv } from '../../test/harness.ts';

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

export function completedEvent(stripeSessionId: string, amountCents: number, overrides: Partial<CheckoutSessionSnapshot> = {}, options: EventOptions = {}) {
  return checkoutSessionEvent({ id: stripeSessionId, amount_total: amountCents, ...overrides }, options);
}

/** POSTs an event to the webhook, signed with the test secret unless a header is given. */
export async function deliver(testEnv: TestEnv, event: unknown, signature?: string | null) {
  const payload = typeof event === 'string' ? event : JSON.stringify(event);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const header = signature === undefined ? await signStripePayload(payload, testEnv.STRIPE_WEBHOOK_SECRET as string) : signature;
  if (header !== null) headers['stripe-signature'] = header;
  const response = await call(api(), testEnv, '/v1/webhooks/stripe', { method: 'POST', headers, body: payload });
  return { status: response.status, body: (await response.json()) as { received?: boolean; credited?: boolean; outcome?: string; error?: { code: string } } };
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
