/**
 * Money Stripe takes back from a credited checkout: a refund of its charge (`charge.refunded`,
 * cumulative and possibly partial: only the increase over the last booked total is debited), a
 * dispute (`charge.dispute.created`: the disputed amount is debited as a chargeback) and a won
 * dispute (`charge.dispute.closed` with `won`: credited back). One statement books the event record,
 * the per-charge state and the receivable debit together (faucet_book_stripe_reversal,
 * migrations/0007); the developer revenue of money already spent is then clawed back, keyed by the
 * debit, so a redelivery after a failure between the two finishes the clawback.
 */
import { sql } from 'drizzle-orm';
import { clawBackRevenue } from '#shared/ledger/claw-back-revenue.ts';
import { queryOne, type SqlDatabase } from '#shared/query.ts';
import { isZeroUsd, parseDatabaseAmount } from '#shared/money/index.ts';

export type StripeReversalAction = 'refund' | 'dispute' | 'dispute_won';

export type StripeReversalOutcome = 'booked' | 'duplicate_event' | 'nothing_to_book' | 'unknown_charge' | 'amount_mismatch';

export interface StripeReversalInput {
  eventId: string;
  eventType: string;
  action: StripeReversalAction;
  paymentIntentId: string | null;
  chargeId: string | null;
  disputeId: string | null;
  /** Refund: the charge's cumulative `amount_refunded`; dispute: its `amount`; won: ignored. */
  amountCents: number | null;
  currency: string | null;
  requestId: string;
}

export interface StripeReversalResult {
  outcome: StripeReversalOutcome;
  ledgerTransactionId: string | null;
  clawbackId: string | null;
}

interface Row {
  outcome: StripeReversalOutcome;
  wallet_id: string | null;
  ledger_transaction_id: string | null;
  spent_usd: string | null;
}

export async function bookStripeReversal(db: SqlDatabase, input: StripeReversalInput): Promise<StripeReversalResult> {
  const row = await queryOne<Row>(
    db,
    sql`select outcome, wallet_id, ledger_transaction_id, spent_usd::numeric(20, 8)::text as spent_usd
        from faucet_book_stripe_reversal(${input.eventId}, ${input.eventType}, ${input.action}, ${input.paymentIntentId},
          ${input.chargeId}, ${input.disputeId}, ${input.amountCents}::bigint, ${input.currency}, ${input.requestId})`,
  );
  let clawbackId: string | null = null;
  const debited = input.action !== 'dispute_won' && (row.outcome === 'booked' || row.outcome === 'duplicate_event');
  if (debited && row.ledger_transaction_id && row.wallet_id && row.spent_usd) {
    const spent = parseDatabaseAmount(row.spent_usd);
    if (!isZeroUsd(spent)) {
      const clawback = await clawBackRevenue(db, {
        sourceTransactionId: row.ledger_transaction_id,
        userWalletId: row.wallet_id,
        spent,
        requestId: input.requestId,
      });
      if (clawback.outcome === 'booked' || clawback.outcome === 'duplicate') clawbackId = clawback.clawbackId;
    }
  }
  return { outcome: row.outcome, ledgerTransactionId: row.ledger_transaction_id, clawbackId };
}
