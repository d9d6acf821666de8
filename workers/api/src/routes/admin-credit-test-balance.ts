import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { creditTestBalance, getWalletBalance, requireUuid } from '#shared/ledger/index.ts';
import { compareUsd, formatUsd, parseWireAmount, usdStringSchema, wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';

/** Test money is for development and test configurations only. */
const TEST_ENVIRONMENTS = new Set(['development', 'test']);
/** One test credit is capped so a typo cannot mint a fortune, even in test. */
const MAX_TEST_CREDIT = parseWireAmount('10000.00000000');

const Body = z
  .strictObject({
    amount_usd: wireAmountSchema,
    reason: z.string().min(1).max(500).optional(),
  })
  .openapi('CreditTestBalanceRequest');

const Response = z
  .object({
    transaction_id: z.string(),
    wallet_id: z.string(),
    amount_usd: usdStringSchema,
    balance_usd: usdStringSchema,
    created_at: z.string(),
  })
  .openapi('TestCredit');

const route = createRoute({
  method: 'post',
  path: '/v1/admin/wallets/{id}/credit-test-balance',
  summary: 'Credit test money to a wallet (development and test configurations only)',
  middleware: [requireAdmin()] as const,
  request: {
    params: z.object({ id: z.string() }),
    body: { required: true, content: { 'application/json': { schema: Body } } },
  },
  responses: {
    201: { description: 'Credited', content: { 'application/json': { schema: Response } } },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export function registerAdminCreditTestBalanceRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    if (!TEST_ENVIRONMENTS.has(c.env.ENVIRONMENT ?? '')) {
      throw new FaucetError('forbidden', 'Test balance can only be credited in development or test configurations');
    }
    const walletId = requireUuid(c.req.valid('param').id, 'wallet');
    const body = c.req.valid('json');
    const amount = parseWireAmount(body.amount_usd, { positive: true });
    if (compareUsd(amount, MAX_TEST_CREDIT) > 0) {
      throw new FaucetError('invalid_request', 'amount_usd must be at most 10000.00000000 for a test credit');
    }
    const { db } = c.var.database();
    const wallet = await getWalletBalance(db, walletId);
    if (!wallet || !['user', 'developer'].includes(wallet.kind)) throw new FaucetError('not_found', 'wallet not found');
    const credit = await creditTestBalance(db, { walletId, amount, requestId: c.var.requestId, reason: body.reason ?? null });
    const after = await getWalletBalance(db, walletId);
    return c.json({ ...credit, balance_usd: formatUsd(after?.balanceUsd ?? amount) }, 201);
  });
}
