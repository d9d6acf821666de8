/**
 * pending → cancelled | rejected with the operator's note and an audit row, releasing the payout's
 * reservation hold in the same statement (faucet_close_payout, migrations/0007). One conditional
 * update: of a cancel racing an approve (or a reject) exactly one takes effect; repeating the same
 * close is idempotent.
 */
import { sql } from 'drizzle-orm';
import { queryOne, requireUuid, type LedgerDatabase } from '#shared/ledger/database.ts';

export type PayoutClosing = 'cancelled' | 'rejected';
export type ClosePayoutOutcome = 'closed' | 'already_closed' | 'invalid_state' | 'not_found';

export async function closePayout(
  db: LedgerDatabase,
  input: { payoutId: string; to: PayoutClosing; operatorNote: string; requestId: string },
): Promise<ClosePayoutOutcome> {
  const row = await queryOne<{ outcome: ClosePayoutOutcome }>(
    db,
    sql`select outcome from faucet_close_payout(${requireUuid(input.payoutId, 'payout')}::uuid, ${input.to},
      ${input.operatorNote}, ${input.requestId})`,
  );
  return row.outcome;
}
