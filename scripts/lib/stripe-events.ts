/**
 * Stripe events as Stripe sends them, signed the way Stripe signs them. Runs in Node and in the
 * Workers runtime (SubtleCrypto), for the fake Stripe server, the replay tool and tests.
 */
import Stripe from 'stripe';

export interface CheckoutSessionSnapshot {
  id: string;
  amount_total: number | null;
  currency?: string | null;
  payment_status?: 'paid' | 'unpaid' | 'no_payment_required';
  status?: 'open' | 'complete' | 'expired';
  client_reference_id?: string | null;
  metadata?: Record<string, string>;
  [key: string]: unknown;
}

export interface EventOptions {
  type?: string;
  eventId?: string;
  livemode?: boolean;
  /** Seconds since the epoch. */
  created?: number;
}

export function randomStripeId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return `${prefix}_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** A `checkout.session.*` event around a session snapshot (`paid`/`complete` unless given). */
export function checkoutSessionEvent(session: CheckoutSessionSnapshot, options: EventOptions = {}) {
  return {
    id: options.eventId ?? randomStripeId('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: options.created ?? Math.floor(Date.now() / 1000),
    livemode: options.livemode ?? false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: options.type ?? 'checkout.session.completed',
    data: {
      object: {
        object: 'checkout.session',
        currency: 'usd',
        payment_status: 'paid',
        status: 'complete',
        mode: 'payment',
        livemode: options.livemode ?? false,
        ...session,
      },
    },
  };
}

/** The `stripe-signature` header for a raw payload (timestamp: seconds, default now). */
export function signStripePayload(payload: string, secret: string, timestamp?: number): Promise<string> {
  return Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret,
    ...(timestamp === undefined ? {} : { timestamp }),
    cryptoProvider: Stripe.createSubtleCryptoProvider(),
  });
}

function eventAround<T extends Record<string, unknown>>(type: string, object: T, options: EventOptions) {
  return {
    id: options.eventId ?? randomStripeId('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: options.created ?? Math.floor(Date.now() / 1000),
    livemode: options.livemode ?? false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: options.type ?? type,
    data: { object: { livemode: options.livemode ?? false, ...object } },
  };
}

/** `charge.refunded` for a charge of a payment intent; `amount_refunded` is cumulative, as Stripe sends it. */
export function chargeRefundedEvent(
  charge: { id: string; payment_intent: string | null; amount: number; amount_refunded: number; currency?: string },
  options: EventOptions = {},
) {
  return eventAround(
    'charge.refunded',
    { object: 'charge', currency: 'usd', paid: true, refunded: charge.amount_refunded >= charge.amount, ...charge },
    options,
  );
}

/** `charge.dispute.created` (or, with `options.type`, `.closed` and its `status`) for a charge. */
export function disputeEvent(
  dispute: { id: string; charge: string; payment_intent: string | null; amount: number; status?: string; currency?: string },
  options: EventOptions = {},
) {
  return eventAround(
    'charge.dispute.created',
    { object: 'dispute', currency: 'usd', reason: 'fraudulent', status: 'needs_response', ...dispute },
    options,
  );
}
