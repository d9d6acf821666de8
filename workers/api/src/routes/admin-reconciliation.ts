import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '../../../shared/app.ts';
import { requireAdmin } from '../../../shared/auth/require-admin.ts';
import { reconcileLedger } from '../../../shared/ledger/index.ts';
import { usdStringSchema } from '../../../shared/money/index.ts';
import { errorResponses } from '../../../shared/openapi.ts';

const Reconciliation = z
  .object({
    ok: z.boolean(),
    checked_at: z.string(),
    counts: z.object({ wallets: z.number().int(), transactions: z.number().int(), entries: z.number().int() }),
    wallet_mismatches: z.array(
      z.object({
        wallet_id: z.string(),
        kind: z.string(),
        balance_usd: usdStringSchema,
        entries_sum_usd: usdStringSchema,
        difference_usd: usdStringSchema,
      }),
    ),
    unbalanced_transactions: z.array(z.object({ transaction_id: z.string(), kind: z.string(), sum_usd: usdStringSchema })),
    negative_wallets: z.array(z.object({ wallet_id: z.string(), kind: z.string(), balance_usd: usdStringSchema })),
    receivables: z
      .array(z.object({ wallet_id: z.string(), kind: z.string(), outstanding_usd: usdStringSchema, recorded_usd: usdStringSchema }))
      .describe('Wallets below zero by chargebacks, refunds or clawbacks of spent money: owed to the platform, not a violation'),
    receivables_total_usd: usdStringSchema,
  })
  .openapi('LedgerReconciliation');

const route = createRoute({
  method: 'get',
  path: '/v1/admin/reconciliation/ledger',
  summary: 'Recompute every wallet from its entries and every transaction’s sum; report each mismatch',
  middleware: [requireAdmin()] as const,
  responses: {
    200: { description: 'Reconciliation report', content: { 'application/json': { schema: Reconciliation } } },
    ...errorResponses(401, 429),
  },
});

export function registerAdminReconciliationRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => c.json(await reconcileLedger(c.var.database().db), 200));
}
