import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { auditGatewayCalls } from '#shared/calls/upstream-audit.ts';
import { reconcileLedger } from '#shared/ledger/index.ts';
import { usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { flushWalletObjects, walletObjectsSummary } from '#shared/wallet/wallet-objects.ts';

const WalletObjects = z
  .object({
    objects: z.number().int().describe('Wallet objects asked: those holding a lease or whose lease ended in the last day'),
    unreachable: z.number().int().describe('Of those, objects that did not answer (missing from the sums)'),
    in_flight_calls: z.number().int(),
    unflushed_calls: z.number().int(),
    unflushed_usd: usdStringSchema,
    refused_calls: z
      .number()
      .int()
      .describe(
        'Settlements the ledger refused, kept in their object (none by construction; an incident: the sweeper books the call at its bound)',
      ),
  })
  .openapi('WalletObjectsSummary');

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
    excess_clawbacks: z
      .array(
        z.object({
          user_wallet_id: z.string(),
          developer_id: z.string(),
          earned_usd: usdStringSchema,
          clawed_back_usd: usdStringSchema,
          excess_usd: usdStringSchema,
          clawback_ids: z.array(z.string()),
        }),
      )
      .describe(
        'End users whose clawbacks still booked exceed the developer revenue earned from them (a violation; ' +
          'reverse the listed clawbacks with POST /v1/admin/clawbacks/{id}/reverse to mend it)',
      ),
    leases: z
      .object({ active: z.number().int(), leased_usd: usdStringSchema })
      .describe('Active leases of wallet objects (holds for calls authorized at the edge, not booked yet); not a violation'),
    wallet_objects: WalletObjects.describe(
      'What the leasing wallet objects hold at this instant: calls in flight and settled calls charged to users but not flushed ' +
        'to the ledger yet (their lease covers them). Ledger + unflushed = everything charged.',
    ),
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

const UpstreamAudit = z
  .object({
    ok: z.boolean(),
    paid_calls: z
      .number()
      .int()
      .describe('Calls on a paid route (platform, developer_key) settled, or past their deadline and settle grace'),
    unbilled_calls: z.number().int().describe('Of those, calls with no booking: upstream work the platform paid for and never billed'),
    in_flight: z.number().int().describe('Paid calls still within their deadline and grace (not judged yet)'),
    receivable_bookings: z.number().int().describe('Bookings written above what the wallet covered (a receivable)'),
  })
  .openapi('UpstreamAudit');

const upstreamRoute = createRoute({
  method: 'get',
  path: '/v1/admin/reconciliation/upstream',
  summary: 'The upstream audit from Faucet’s own call records: every paid gateway call that has ended has its booking',
  description:
    'Reconciliation proves the ledger agrees with itself; this proves it agrees with the calls the gateway made upstream. ' +
    'It sees every call the gateway authorized; comparing with provider-reported usage (per-request rows matched by the ' +
    '`x-client-request-id` the gateway sends) is a separate check (docs/reliability.md).',
  middleware: [requireAdmin()] as const,
  responses: {
    200: { description: 'Upstream audit', content: { 'application/json': { schema: UpstreamAudit } } },
    ...errorResponses(401, 429),
  },
});

const flushRoute = createRoute({
  method: 'post',
  path: '/v1/admin/wallets/flush',
  summary: 'Have every leasing wallet object book the calls it settled now (before an audit or a period close)',
  description: 'Each object flushes on its own within a second; this does it at once. What they still hold after is answered.',
  middleware: [requireAdmin()] as const,
  responses: {
    200: { description: 'What the objects hold after the flush', content: { 'application/json': { schema: WalletObjects } } },
    ...errorResponses(401, 429),
  },
});

export function registerAdminReconciliationRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const { db } = c.var.database();
    // The objects first: a call one flushes meanwhile is counted twice (held, then booked), never missed.
    const walletObjects = await walletObjectsSummary(c.env, db);
    return c.json({ ...(await reconcileLedger(db)), wallet_objects: walletObjects }, 200);
  });

  app.openapi(flushRoute, async (c) => c.json(await flushWalletObjects(c.env, c.var.database().db), 200));

  app.openapi(upstreamRoute, async (c) => {
    const audit = await auditGatewayCalls(c.var.database().db, callLimits(c.env).settleGraceSeconds);
    return c.json(
      {
        ok: audit.ok,
        paid_calls: audit.paidCalls,
        unbilled_calls: audit.unbilledCalls,
        in_flight: audit.inFlight,
        receivable_bookings: audit.receivableBookings,
      },
      200,
    );
  });
}
