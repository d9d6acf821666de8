/**
 * pending → cancelled | rejected with the operator's note and an audit row, releasing the payout's
 * reservation hold in the same statement (faucet_close_payout); an approved payout closes too while
 * its wallet no longer covers it (a clawback ate the reservation: mark-paid answers 402). Under the
 * wallet's lock and the payout row's: of a cancel racing an approve, a mark-paid or a reject exactly
 * one takes effect; repeating the same close is idempotent.
 */
import { sql } from 'drizzle-orm';
import { queryOne, requireUuid, type SqlDatabase } from '#shared/query.ts';

export type PayoutClosing = 'cancelled' | 'rejected';
export type ClosePayoutOutcome = 'closed' | 'already_closed' | 'invalid_state' | 'not_found';

export async function closePayout(
  db: SqlDatabase,
  input: { payoutId: string; to: PayoutClosing; operatorNote: string; requestId: string },
): Promise<ClosePayoutOutcome> {
  const row = await queryOne<{ outcome: ClosePayoutOutcome }>(
    db,
    sql`select outcome from faucet_close_payout(${requireUuid(input.payoutId, 'payout')}::uuid, ${input.to},
      ${input.operatorNote}, ${input.requestId})`,
  );
  return row.outcome;
}
