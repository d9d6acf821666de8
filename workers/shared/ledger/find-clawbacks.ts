/** Read revenue clawbacks for the admin review: one by id, or a page newest first, on the wire. */
import { z } from '@hono/zod-openapi';
import { and, desc, eq } from 'drizzle-orm';
import { revenueClawbacks } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { formatUsd, parseDatabaseAmount, usdStringSchema } from '../money/index.ts';
import { requireUuid } from '../query.ts';

export const clawbackStatuses = ['booked', 'reversed'] as const;

export const ClawbackSchema = z
  .object({
    id: z.string(),
    status: z.enum(clawbackStatuses),
    developer_id: z.string(),
    developer_wallet_id: z.string(),
    user_wallet_id: z.string(),
    source_transaction_id: z.string().describe('The chargeback or refund this clawback came from'),
    source_kind: z.string(),
    spent_usd: usdStringSchema.describe('Part of the charged-back amount the user had already spent'),
    developer_revenue_basis_usd: usdStringSchema.describe("Σ developer revenue over the user's usage"),
    retail_basis_usd: usdStringSchema.describe("Σ retail over the user's usage"),
    amount_usd: usdStringSchema,
    ledger_transaction_id: z.string(),
    reversal_transaction_id: z.string().nullable(),
    reversal_note: z.string().nullable(),
    created_at: z.string(),
    reversed_at: z.string().nullable(),
  })
  .openapi('RevenueClawback');

export type ClawbackView = z.infer<typeof ClawbackSchema>;

type Clawback = typeof revenueClawbacks.$inferSelect;

const usd = (value: string) => formatUsd(parseDatabaseAmount(value));

function view(row: Clawback): ClawbackView {
  return {
    id: row.id,
    status: ClawbackSchema.shape.status.parse(row.status),
    developer_id: row.developerId,
    developer_wallet_id: row.developerWalletId,
    user_wallet_id: row.userWalletId,
    source_transaction_id: row.sourceTransactionId,
    source_kind: row.sourceKind,
    spent_usd: usd(row.spentUsd),
    developer_revenue_basis_usd: usd(row.developerRevenueBasisUsd),
    retail_basis_usd: usd(row.retailBasisUsd),
    amount_usd: usd(row.amount),
    ledger_transaction_id: row.ledgerTransactionId,
    reversal_transaction_id: row.reversalTransactionId,
    reversal_note: row.reversalNote,
    created_at: row.createdAt.toISOString(),
    reversed_at: row.reversedAt?.toISOString() ?? null,
  };
}

export async function findClawback(db: Db, id: string): Promise<ClawbackView | undefined> {
  const [row] = await db
    .select()
    .from(revenueClawbacks)
    .where(eq(revenueClawbacks.id, requireUuid(id, 'clawback')));
  return row ? view(row) : undefined;
}

export async function listClawbacks(
  db: Db,
  filter: { status?: ClawbackView['status']; developerId?: string; limit: number },
): Promise<ClawbackView[]> {
  const rows = await db
    .select()
    .from(revenueClawbacks)
    .where(
      and(
        filter.status === undefined ? undefined : eq(revenueClawbacks.status, filter.status),
        filter.developerId === undefined ? undefined : eq(revenueClawbacks.developerId, filter.developerId),
      ),
    )
    .orderBy(desc(revenueClawbacks.createdAt), desc(revenueClawbacks.id))
    .limit(filter.limit);
  return rows.map(view);
}
