/**
 * Credit a paid Stripe Checkout Session to its wallet, once. One statement (faucet_complete_checkout,
 * migrations/0003, 0007): the webhook event id, the session's pending → completed change and the `top_up`
 * (wallet +amount, payment_clearing −amount) commit together, under unique constraints on the event
 * id, the session and the transaction's idempotency key `checkout:<session id>`.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';

export interface CreditCheckoutInput {
  eventId: string;
  eventType: string;
  stripeSessionId: string;
  /** `amount_total` of the paid session, in cents. */
  amountCents: number;
  currency: string;
  requestId: string;
  /** The session's payment intent, recorded so that refunds and disputes of its charge find the wallet. */
  paymentIntentId: string | null;
}

export type CreditCheckoutOutcome = 'credited' | 'unknown_session' | 'duplicate_event' | 'already_completed' | 'amount_mismatch';

export interface CreditCheckoutResult {
  outcome: CreditCheckoutOutcome;
  checkoutSessionId: string | null;
  walletId: string | null;
  ledgerTransactionId: string | null;
}

interface Row {
  outcome: CreditCheckoutOutcome;
  checkout_session_id: string | null;
  wallet_id: string | null;
  ledger_transaction_id: string | null;
}

export async function creditCheckout(db: SqlDatabase, input: CreditCheckoutInput): Promise<CreditCheckoutResult> {
  const row = await queryOne<Row>(
    db,
    sql`select outcome, checkout_session_id, wallet_id, ledger_transaction_id from faucet_complete_checkout(
      ${input.eventId}, ${input.eventType}, ${input.stripeSessionId}, ${input.amountCents}::bigint, ${input.currency},
      ${input.requestId}, ${input.paymentIntentId})`,
  );
  return {
    outcome: row.outcome,
    checkoutSessionId: row.checkout_session_id,
    walletId: row.wallet_id,
    ledgerTransactionId: row.ledger_transaction_id,
  };
}
