import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { bookOwnCalls } from '#shared/wallet/wallet-notices.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { getWalletBalance } from '#shared/ledger/index.ts';
import { formatUsd, usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';

const WalletResponse = z
  .object({
    wallet_id: z.string(),
    currency: z.literal('USD'),
    balance_usd: usdStringSchema,
    held_usd: usdStringSchema,
    available_usd: usdStringSchema,
  })
  .openapi('UserWallet');

const route = createRoute({
  method: 'get',
  path: '/v1/user/wallet',
  summary: "The session user's wallet: balance, amount held by in-flight calls, and what is available",
  middleware: [requireSession()] as const,
  responses: {
    200: { description: 'Wallet', content: { 'application/json': { schema: WalletResponse } } },
    ...errorResponses(401, 429),
  },
});

export function registerUserWalletRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    await bookOwnCalls(c.env, c.var.session.endUserId, c.var.logger);
    const wallet = await getWalletBalance(c.var.database().db, c.var.session.walletId);
    if (!wallet) throw new FaucetError('not_found', 'wallet not found');
    return c.json(
      {
        wallet_id: wallet.walletId,
        currency: wallet.currency,
        balance_usd: formatUsd(wallet.balanceUsd),
        held_usd: formatUsd(wallet.heldUsd),
        available_usd: formatUsd(wallet.availableUsd),
      },
      200,
    );
  });
}
