import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { adjustmentKinds, adjustWallet, requireUuid } from '#shared/ledger/index.ts';
import { withLeaseRecalled } from '#shared/wallet/recall-lease.ts';
import { parseWireAmount, usdStringSchema, wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';

const Body = z
  .strictObject({
    kind: z.enum(adjustmentKinds),
    direction: z.enum(['credit', 'debit']),
    amount_usd: wireAmountSchema,
    reason: z.string().trim().min(1).max(500),
    idempotency_key: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9._:-]+$/, 'must be letters, digits, ., _, : or -')
      .optional(),
  })
  .openapi('WalletAdjustmentRequest');

const Adjustment = z
  .object({
    transaction_id: z.string(),
    wallet_id: z.string(),
    kind: z.enum(adjustmentKinds),
    direction: z.enum(['credit', 'debit']),
    amount_usd: usdStringSchema,
    reason: z.string(),
    idempotency_key: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi('WalletAdjustment');

const route = createRoute({
  method: 'post',
  path: '/v1/admin/wallets/{wallet_id}/adjustments',
  summary: 'Correct a wallet with a new balanced transaction (adjustment, refund or chargeback)',
  middleware: [requireAdmin()] as const,
  request: {
    params: z.object({ wallet_id: z.string() }),
    body: { required: true, content: { 'application/json': { schema: Body } } },
  },
  responses: {
    201: {
      description: 'Posted, or the replay of an earlier request with the same idempotency key (header `idempotent-replayed: true`)',
      content: { 'application/json': { schema: Adjustment } },
    },
    ...errorResponses(400, 401, 402, 404, 409, 429),
  },
});

export function registerAdminAdjustmentRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const walletId = requireUuid(c.req.valid('param').wallet_id, 'wallet');
    const body = c.req.valid('json');
    // A debit meets the wallet as it is: the wallet object books what it settled and gives its lease back first.
    const adjust = () =>
      adjustWallet(c.var.database().db, {
        walletId,
        kind: body.kind,
        direction: body.direction,
        amount: parseWireAmount(body.amount_usd, { positive: true }),
        reason: body.reason,
        idempotencyKey: body.idempotency_key ?? null,
        requestId: c.var.requestId,
      });
    const { adjustment, replayed } =
      body.direction === 'debit' ? await withLeaseRecalled(c.env, c.var.database().db, { walletId }, c.var.logger, adjust) : await adjust();
    if (replayed) c.header('idempotent-replayed', 'true');
    return c.json(adjustment, 201);
  });
}
