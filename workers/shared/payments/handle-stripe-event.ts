/**
 * What a verified Stripe event does. A paid checkout session (`checkout.session.completed` with
 * `payment_status: paid`, or `checkout.session.async_payment_succeeded`) credits its wallet once;
 * every other event is acknowledged and ignored.
 */
import { z } from '@hono/zod-openapi';
import type Stripe from 'stripe';
import { FaucetError } from '../errors.ts';
import { creditCheckout, type CreditCheckoutOutcome } from '../ledger/credit-checkout.ts';
import type { LedgerDatabase } from '../ledger/database.ts';

const CREDITING_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

const PaidSession = z.object({
  id: z.string().min(1).max(255),
  // Null for sessions that charge nothing (e.g. setup mode): never one of our top-ups.
  amount_total: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
  currency: z.string().min(1).max(10).nullable(),
  payment_status: z.string(),
});

export type WebhookOutcome = CreditCheckoutOutcome | 'ignored' | 'payment_not_completed' | 'livemode_refused';

export interface WebhookResult {
  credited: boolean;
  outcome: WebhookOutcome;
}

export async function handleStripeEvent(
  db: LedgerDatabase,
  event: Stripe.Event,
  context: { requestId: string; liveModeAllowed: boolean },
): Promise<WebhookResult> {
  if (!CREDITING_EVENTS.has(event.type)) return { credited: false, outcome: 'ignored' };
  if (event.livemode && !context.liveModeAllowed) return { credited: false, outcome: 'livemode_refused' };
  const parsed = PaidSession.safeParse(event.data.object);
  if (!parsed.success) throw new FaucetError('invalid_request', 'The event does not carry a checkout session');
  const session = parsed.data;
  if (session.amount_total === null || session.currency === null) return { credited: false, outcome: 'ignored' };
  if (session.payment_status !== 'paid') return { credited: false, outcome: 'payment_not_completed' };
  const result = await creditCheckout(db, {
    eventId: event.id,
    eventType: event.type,
    stripeSessionId: session.id,
    amountCents: session.amount_total,
    currency: session.currency,
    requestId: context.requestId,
  });
  return { credited: result.outcome === 'credited', outcome: result.outcome };
}
