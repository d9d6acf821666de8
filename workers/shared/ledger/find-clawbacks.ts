/** Read revenue clawbacks for the admin review: one by id, or a page newest first, on the wire. */
import { z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import { formatUsd, parseDatabaseAmount, usdStringSchema } from '../money/index.ts';
import { queryRows, requireUuid, type LedgerDatabase } from './database.ts';

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

interface Row {
  id: string;
  status: ClawbackView['status'];
  developer_id: string;
  developer_wallet_id: string;
  user_wallet_id: string;
  source_transaction_id: string;
  source_kind: string;
  spent_usd: string;
  developer_revenue_basis_usd: string;
  retail_basis_usd: string;
  amount: string;
  ledger_transaction_id: string;
  reversal_transaction_id: string | null;
  reversal_note: string | null;
  created_at: Date | string;
  reversed_at: Date | string | null;
}

const columns = sql`id, status, developer_id, developer_wallet_id, user_wallet_id, source_transaction_id, source_kind,
  spent_usd::text, developer_revenue_basis_usd::text, retail_basis_usd::text, amount::text, ledger_transaction_id,
  reversal_transaction_id, reversal_note, created_at, reversed_at`;

const usd = (value: string) => formatUsd(parseDatabaseAmount(value));
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

function view(row: Row): ClawbackView {
  return {
    id: row.id,
    status: row.status,
    developer_id: row.developer_id,
    developer_wallet_id: row.developer_wallet_id,
    user_wallet_id: row.user_wallet_id,
    source_transaction_id: row.source_transaction_id,
    source_kind: row.source_kind,
    spent_usd: usd(row.spent_usd),
    developer_revenue_basis_usd: usd(row.developer_revenue_basis_usd),
    retail_basis_usd: usd(row.retail_basis_usd),
    amount_usd: usd(row.amount),
    ledger_transaction_id: row.ledger_transaction_id,
    reversal_transaction_id: row.reversal_transaction_id,
    reversal_note: row.reversal_note,
    created_at: iso(row.created_at) as string,
    reversed_at: iso(row.reversed_at),
  };
}

export async function findClawback(db: LedgerDatabase, id: string): Promise<ClawbackView | undefined> {
  const [row] = await queryRows<Row>(db, sql`select ${columns} from revenue_clawbacks where id = ${requireUuid(id, 'clawback')}::uuid`);
  return row ? view(row) : undefined;
}

export async function listClawbacks(
  db: LedgerDatabase,
  filter: { status?: ClawbackView['status']; developerId?: string; limit: number },
): Promise<ClawbackView[]> {
  const rows = await queryRows<Row>(
    db,
    sql`select ${columns} from revenue_clawbacks
        where (${filter.status ?? null}::text is null or status = ${filter.status ?? null})
          and (${filter.developerId ?? null}::uuid is null or developer_id = ${filter.developerId ?? null}::uuid)
        order by created_at desc, id desc limit ${filter.limit}`,
  );
  return rows.map(view);
}
