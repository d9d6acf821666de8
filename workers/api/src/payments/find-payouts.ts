/** Read payouts for the admin API: one by id, or a page newest first. */
import { sql } from 'drizzle-orm';
import { queryRows, requireUuid, type SqlDatabase } from '#shared/query.ts';
import type { PayoutRow } from '#shared/ledger/reserve-payouts.ts';

const columns = sql`id, developer_id, wallet_id, amount::numeric(20, 8)::text as amount, status, operator_note,
  ledger_transaction_id, created_at, approved_at, paid_at, closed_at`;

export async function findPayout(db: SqlDatabase, payoutId: string): Promise<PayoutRow | undefined> {
  const [row] = await queryRows<PayoutRow>(db, sql`select ${columns} from payouts where id = ${requireUuid(payoutId, 'payout')}::uuid`);
  return row;
}

export function listPayouts(db: SqlDatabase, filter: { status?: PayoutRow['status']; limit: number }): Promise<PayoutRow[]> {
  return queryRows<PayoutRow>(
    db,
    sql`select ${columns} from payouts
        where (${filter.status ?? null}::text is null or status = ${filter.status ?? null})
        order by created_at desc, id desc limit ${filter.limit}`,
  );
}
