/**
 * Developer-key budgets (docs/provider-keys.md): each developer-key call reserves an upper bound of
 * its upstream cost under the key's row lock (`faucet_reserve_credential_budget`, migration 0004)
 * in the gateway's authorize statement; the reservation stops counting when the call's usage event
 * is recorded (its actual upstream cost counts instead) or when the call is abandoned.
 */
import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type LedgerDatabase } from '../ledger/database.ts';
import { formatUsd, type Usd } from '../money/index.ts';

export type ReservationOutcome = 'reserved' | 'budget_exceeded' | 'duplicate' | 'inactive';

/** The SQL call that reserves `amount` of the key's monthly budget for `requestId` (one outcome). */
export function reserveBudgetSql(credentialId: SQL, requestId: string, amount: Usd): SQL {
  return sql`faucet_reserve_credential_budget(${credentialId}, ${requestId}, ${formatUsd(amount)}::numeric)`;
}

/** The upstream call failed before anything was booked: give the reserved budget back. */
export async function releaseBudgetReservation(db: LedgerDatabase, requestId: string): Promise<boolean> {
  const rows = await queryRows<{ request_id: string }>(
    db,
    sql`delete from provider_credential_reservations r where r.request_id = ${requestId}
         and not exists (select 1 from usage_events u where u.request_id = r.request_id) returning r.request_id`,
  );
  return rows.length > 0;
}
