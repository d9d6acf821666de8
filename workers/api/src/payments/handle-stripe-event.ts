/**
 * What a verified Stripe event does. A paid checkout session (`checkout.session.completed` with
 * `payment_status: paid`, or `checkout.session.async_payment_succeeded`) credits its wallet once and
 * records its payment intent. A refund of that payment (`charge.refunded`) or a dispute
 * (`charge.dispute.created`) debits the wallet, even below zero; a won dispute
 * (`charge.dispute.closed`, `won`) credits it back (book-stripe-reversal.ts). Every other event is
 * acknowledged and ignored.
 */
import { z } from '@hono/zod-openapi';
import type Stripe from 'stripe';
import { FaucetError } from '#shared/wire/errors.ts';
import { creditCheckout, type CreditCheckoutOutcome } from '#shared/ledger/credit-checkout.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { bookStripeReversal, type StripeReversalAction, type StripeReversalOutcome } from './book-stripe-reversal.ts';

const CREDITING_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

const PaidSession = z.object({
  id: z.string().min(1).max(255),
  // Null for sessions that charge nothing (e.g. setup mode): never one of our top-ups.
  amount_total: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
  currency: z.string().min(1).max(10).nullable(),
  payment_status: z.string(),
  payment_intent: z.string().min(1).max(255).nullish(),
});

const cents = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const stripeId = z.string().min(1).max(255);

const RefundedCharge = z.object({
  id: stripeId,
  payment_intent: stripeId.nullish(),
  // Cumulative over every refund of the charge: a partial refund repeated arrives as a growing total.
  amount_refunded: cents,
  currency: z.string().min(1).max(10),
});

const Dispute = z.object({
  id: stripeId,
  charge: stripeId,
  payment_intent: stripeId.nullish(),
  amount: cents,
  currency: z.string().min(1).max(10),
  status: z.string(),
});

export type WebhookOutcome =
  | CreditCheckoutOutcome
  | Exclude<StripeReversalOutcome, 'booked'>
  | 'refund_booked'
  | 'chargeback_booked'
  | 'chargeback_reversed'
  | 'ignored'
  | 'payment_not_completed'
  | 'livemode_refused';

const BOOKED: Record<StripeReversalAction, WebhookOutcome> = {
  refund: 'refund_booked',
  dispute: 'chargeback_booked',
  dispute_won: 'chargeback_reversed',
};

/** The reversal an event asks for, or undefined for events that move no money. */
function reversalOf(event: Stripe.Event): Omit<Parameters<typeof bookStripeReversal>[1], 'requestId'> | undefined {
  const base = { eventId: event.id, eventType: event.type };
  if (event.type === 'charge.refunded') {
    const charge = parse(RefundedCharge, event.data.object, 'charge');
    return {
      ...base,
      action: 'refund',
      paymentIntentId: charge.payment_intent ?? null,
      chargeId: charge.id,
      disputeId: null,
      amountCents: charge.amount_refunded,
      currency: charge.currency,
    };
  }
  if (event.type === 'charge.dispute.created' || event.type === 'charge.dispute.closed') {
    const dispute = parse(Dispute, event.data.object, 'dispute');
    if (event.type === 'charge.dispute.closed' && dispute.status !== 'won') return undefined;
    return {
      ...base,
      action: event.type === 'charge.dispute.created' ? 'dispute' : 'dispute_won',
      paymentIntentId: dispute.payment_intent ?? null,
      chargeId: dispute.charge,
      disputeId: dispute.id,
      amountCents: dispute.amount,
      currency: dispute.currency,
    };
  }
  return undefined;
}

function parse<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new FaucetError('invalid_request', `The event does not carry a ${what}`);
  return parsed.data;
}

export interface WebhookResult {
  credited: boolean;
  outcome: WebhookOutcome;
}

export async function handleStripeEvent(
  db: SqlDatabase,
  event: Stripe.Event,
  context: {
    requestId: string;
    liveModeAllowed: boolean;
    /** Runs a reversal with the wallet object's lease recalled first (recall-lease.ts). */
    withLeaseRecalled?: <T>(paymentIntentId: string, debit: () => Promise<T>) => Promise<T>;
  },
): Promise<WebhookResult> {
  const reversal = reversalOf(event);
  if (!reversal && !CREDITING_EVENTS.has(event.type)) return { credited: false, outcome: 'ignored' };
  if (event.livemode && !context.liveModeAllowed) return { credited: false, outcome: 'livemode_refused' };
  if (reversal) {
    // Money taken back: the wallet object's lease is recalled first (docs/edge.md).
    const book = () => bookStripeReversal(db, { ...reversal, requestId: context.requestId });
    const { paymentIntentId } = reversal;
    const result =
      reversal.action !== 'dispute_won' && paymentIntentId !== null && context.withLeaseRecalled
        ? await context.withLeaseRecalled(paymentIntentId, book)
        : await book();
    const outcome = result.outcome === 'booked' ? BOOKED[reversal.action] : result.outcome;
    return { credited: outcome === 'chargeback_reversed', outcome };
  }
  return creditPaidCheckout(db, { eventId: event.id, eventType: event.type, session: event.data.object }, context.requestId);
}

/**
 * Credits a checkout session object as Stripe describes it (a completion event's, or one the
 * operator's replay retrieved from Stripe) once: unpaid or amount-less sessions credit nothing.
 */
export async function creditPaidCheckout(
  db: SqlDatabase,
  input: { eventId: string; eventType: string; session: unknown },
  requestId: string,
): Promise<WebhookResult> {
  const parsed = PaidSession.safeParse(input.session);
  if (!parsed.success) throw new FaucetError('invalid_request', 'The event does not carry a checkout session');
  const session = parsed.data;
  if (session.amount_total === null || session.currency === null) return { credited: false, outcome: 'ignored' };
  if (session.payment_status !== 'paid') return { credited: false, outcome: 'payment_not_completed' };
  const result = await creditCheckout(db, {
    eventId: input.eventId,
    eventType: input.eventType,
    stripeSessionId: session.id,
    amountCents: session.amount_total,
    currency: session.currency,
    requestId,
    paymentIntentId: session.payment_intent ?? null,
  });
  return { credited: result.outcome === 'credited', outcome: result.outcome };
}
