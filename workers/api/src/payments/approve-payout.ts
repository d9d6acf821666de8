/**
 * pending → processing with the operator's note and an audit row, one conditional statement
 * (faucet_approve_payout, migrations/0003): of concurrent approvals exactly one wins.
 */
import { sql } from 'drizzle-orm';
import { queryOne, requireUuid, type SqlDatabase } from '#shared/query.ts';

export type ApprovePayoutOutcome = 'approved' | 'invalid_state' | 'not_found';

export async function approvePayout(
  db: SqlDatabase,
  input: { payoutId: string; operatorNote: string; requestId: string },
): Promise<ApprovePayoutOutcome> {
  const row = await queryOne<{ outcome: ApprovePayoutOutcome }>(
    db,
    sql`select outcome from faucet_approve_payout(${requireUuid(input.payoutId, 'payout')}::uuid, ${input.operatorNote},
      ${input.requestId})`,
  );
  return row.outcome;
}
