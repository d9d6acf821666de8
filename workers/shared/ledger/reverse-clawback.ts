/**
 * An operator's review found a clawback wrong: credit the developer back with a new transaction
 * (`revenue_clawback_reversal`), audited with the note. Idempotent: a second reversal changes nothing.
 */
import { sql } from 'drizzle-orm';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';

export type ReverseClawbackOutcome = 'reversed' | 'already_reversed' | 'not_found';

export async function reverseClawback(
  db: SqlDatabase,
  input: { clawbackId: string; note: string; requestId: string },
): Promise<ReverseClawbackOutcome> {
  const row = await queryOne<{ outcome: ReverseClawbackOutcome }>(
    db,
    sql`select outcome from faucet_reverse_clawback(${requireUuid(input.clawbackId, 'clawback')}::uuid, ${input.note}, 'admin',
      ${input.requestId})`,
  );
  return row.outcome;
}
