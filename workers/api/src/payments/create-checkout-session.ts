/**
 * Start a top-up: a Stripe Checkout Session for a whole-cent amount, and the pending
 * `checkout_sessions` row the webhook later completes. The row is written before the URL is handed
 * out, so nobody can pay a session the database does not know.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { Db } from '#shared/db.ts';
import { schema } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { createStripeClient } from './stripe-client.ts';

export interface CreateCheckoutInput {
  walletId: string;
  amountCents: number;
  /** Where Stripe sends the buyer back (`?checkout=success|cancelled` is appended). */
  returnUrl: string;
  requestId: string;
}

export interface CreatedCheckout {
  stripeSessionId: string;
  url: string;
  expiresAt: string | null;
}

function withQuery(url: string, value: string): string {
  const target = new URL(url);
  target.searchParams.set('checkout', value);
  return target.toString();
}

export async function createCheckoutSession(env: Env, db: Db, input: CreateCheckoutInput): Promise<CreatedCheckout> {
  const stripe = createStripeClient(env);
  let session;
  try {
    session = await stripe.checkout.sessions.create(
      {
        mode: 'payment',
        line_items: [
          {
            quantity: 1,
            price_data: { currency: 'usd', unit_amount: input.amountCents, product_data: { name: 'Faucet balance top-up' } },
          },
        ],
        success_url: withQuery(input.returnUrl, 'success'),
        cancel_url: withQuery(input.returnUrl, 'cancelled'),
        client_reference_id: input.walletId,
        metadata: { wallet_id: input.walletId, purpose: 'faucet_top_up' },
      },
      // A retried request (same x-request-id) gets the same session back instead of a second one.
      { idempotencyKey: `faucet-checkout:${input.walletId}:${input.requestId}` },
    );
  } catch (error) {
    throw new FaucetError('upstream_error', 'The payment provider could not create a checkout session', { cause: error });
  }
  if (!session.url || session.amount_total !== input.amountCents) {
    throw new FaucetError('upstream_error', 'The payment provider answered with an unexpected checkout session');
  }
  await db
    .insert(schema.checkoutSessions)
    .values({ stripeSessionId: session.id, walletId: input.walletId, amountCents: input.amountCents })
    .onConflictDoNothing({ target: schema.checkoutSessions.stripeSessionId });
  return {
    stripeSessionId: session.id,
    url: session.url,
    expiresAt: session.expires_at ? new Date(session.expires_at * 1000).toISOString() : null,
  };
}
