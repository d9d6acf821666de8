/** A payout on the wire (docs/payments.md): amounts as 8-digit strings, times as ISO-8601. */
import { z } from '@hono/zod-openapi';
import type { PayoutRow } from '#shared/ledger/reserve-payouts.ts';
import { formatUsd, parseDatabaseAmount, usdStringSchema } from '#shared/money/index.ts';

export const payoutStatuses = ['pending', 'processing', 'paid', 'cancelled', 'rejected'] as const;
export const payoutStatusSchema = z.enum(payoutStatuses);

export const PayoutSchema = z
  .object({
    id: z.string(),
    developer_id: z.string(),
    wallet_id: z.string(),
    amount_usd: usdStringSchema,
    status: payoutStatusSchema,
    operator_note: z.string().nullable(),
    ledger_transaction_id: z.string().nullable(),
    created_at: z.string(),
    approved_at: z.string().nullable(),
    paid_at: z.string().nullable(),
    closed_at: z.string().nullable().describe('When the payout was cancelled or rejected'),
  })
  .openapi('Payout');

export type PayoutView = z.infer<typeof PayoutSchema>;

const iso = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString());

export function payoutView(row: PayoutRow): PayoutView {
  return {
    id: row.id,
    developer_id: row.developer_id,
    wallet_id: row.wallet_id,
    amount_usd: formatUsd(parseDatabaseAmount(String(row.amount))),
    status: row.status,
    operator_note: row.operator_note,
    ledger_transaction_id: row.ledger_transaction_id,
    created_at: iso(row.created_at) as string,
    approved_at: iso(row.approved_at),
    paid_at: iso(row.paid_at),
    closed_at: iso(row.closed_at),
  };
}
