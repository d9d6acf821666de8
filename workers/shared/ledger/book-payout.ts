/**
 * Mark an approved payout paid and book it: developer wallet −amount, payment_clearing +amount, the
 * reservation hold settled, an audit row — one statement (faucet_mark_payout_paid, migrations/0003).
 * The status change is a conditional update (`where status = 'processing'`), so of concurrent calls
 * exactly one books.
 */
import { sql } from 'drizzle-orm';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';

export type BookPayoutResult = { outcome: 'paid'; ledgerTransactionId: string } | { outcome: 'invalid_state' | 'not_found' };

export async function bookPayout(
  db: SqlDatabase,
  input: { payoutId: string; operatorNote?: string | null; requestId: string },
): Promise<BookPayoutResult> {
  const row = await queryOne<{ outcome: BookPayoutResult['outcome']; ledger_transaction_id: string | null }>(
    db,
    sql`select outcome, ledger_transaction_id from faucet_mark_payout_paid(${requireUuid(input.payoutId, 'payout')}::uuid,
      ${input.operatorNote ?? null}, ${input.requestId})`,
  );
  return row.outcome === 'paid' ? { outcome: 'paid', ledgerTransactionId: row.ledger_transaction_id as string } : { outcome: row.outcome };
}
