/**
 * One developer's payouts, newest first, a page at a time (keyset on created_at, id; the cursor is the
 * last payout id seen, looked up among the developer's own payouts only, so another developer's id
 * as a cursor yields an empty page and tells nothing). A plain read: Drizzle's query builder, so
 * the row type is the schema's.
 */
import { and, desc, eq, sql } from 'drizzle-orm';
import { payouts } from '../../../../drizzle/schema.ts';
import type { Db } from '#shared/db.ts';
import { isUuid } from '#shared/query.ts';
import type { PayoutRow } from '#shared/ledger/reserve-payouts.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { payoutStatusSchema } from './payout-view.ts';

export async function listDeveloperPayouts(
  db: Db,
  query: { developerId: string; status: PayoutRow['status'] | undefined; limit: number; cursor: string | undefined },
): Promise<{ rows: PayoutRow[]; nextCursor: string | null }> {
  if (query.cursor !== undefined && !isUuid(query.cursor)) throw new FaucetError('invalid_request', 'cursor is malformed');
  const rows = await db
    .select({
      id: payouts.id,
      developer_id: payouts.developerId,
      wallet_id: payouts.walletId,
      amount: payouts.amount,
      status: payouts.status,
      operator_note: payouts.operatorNote,
      ledger_transaction_id: payouts.ledgerTransactionId,
      created_at: payouts.createdAt,
      approved_at: payouts.approvedAt,
      paid_at: payouts.paidAt,
      closed_at: payouts.closedAt,
    })
    .from(payouts)
    .where(
      and(
        eq(payouts.developerId, query.developerId),
        query.status === undefined ? undefined : eq(payouts.status, query.status),
        query.cursor === undefined
          ? undefined
          : sql`(${payouts.createdAt}, ${payouts.id}) < (select c.created_at, c.id from payouts c
                 where c.id = ${query.cursor}::uuid and c.developer_id = ${query.developerId}::uuid)`,
      ),
    )
    .orderBy(desc(payouts.createdAt), desc(payouts.id))
    .limit(query.limit + 1);
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit).map((row) => ({ ...row, status: payoutStatusSchema.parse(row.status) }));
  return { rows: shown, nextCursor: more ? (shown.at(-1)?.id ?? null) : null };
}
