/**
 * The developer's money views (docs/developers.md, "Money"), each limited to the calling developer's
 * own data: their wallet (balance, revenue not yet rolled up, payout reservations, what a payout
 * could take), their end users (by `user_ref`, never a raw id: spend, last seen, wallet balance) and
 * their payouts. Read-only.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { apps } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { listEndUsers } from '#shared/developers/list-end-users.ts';
import { getDeveloperWallet } from '#shared/ledger/developer-wallet.ts';
import { formatUsd, parseDatabaseAmount, usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { listDeveloperPayouts } from '../payments/list-developer-payouts.ts';
import { PayoutSchema, payoutStatusSchema, payoutView } from '../payments/payout-view.ts';
import { PageQuery } from './developer-schemas.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const DeveloperWalletSchema = z
  .object({
    wallet_id: z.string(),
    currency: z.literal('USD'),
    balance_usd: usdStringSchema.describe("The sum of the wallet's ledger entries (includes pending_usd)"),
    pending_usd: usdStringSchema.describe('Revenue booked by calls and not yet rolled up into the balance row'),
    reserved_usd: usdStringSchema.describe('Reserved by open (pending or processing) payouts'),
    available_usd: usdStringSchema.describe('What a payout run could take now: balance − active holds, never below zero'),
  })
  .openapi('DeveloperWallet');

const EndUserSchema = z
  .object({
    user_ref: z.string().openapi({ description: 'The opaque user_ref POST /v1/sessions returned for this user (never the raw id)' }),
    app: z.string().openapi({ description: 'public_app_id of the app the user belongs to' }),
    spend_usd: usdStringSchema.describe('Total retail charged for their calls'),
    requests: z.number().int(),
    balance_usd: usdStringSchema.describe('Their wallet balance (below zero only as a receivable)'),
    last_seen_at: z.string().openapi({ description: 'Latest of first appearance, newest session and newest call' }),
    created_at: z.string(),
  })
  .openapi('DeveloperEndUser');

const EndUserQuery = PageQuery.extend({
  app: z.string().min(1).max(100).optional().openapi({ description: 'Only this app (public_app_id)' }),
});

const wallet = createRoute({
  method: 'get',
  path: '/v1/developer/wallet',
  summary: 'Your developer wallet: balance, revenue not yet rolled up, reserved for payouts, available',
  middleware: [requireDeveloper()] as const,
  responses: { 200: { description: 'Wallet', content: json(DeveloperWalletSchema) }, ...errorResponses(401, 403, 404, 429) },
});

const endUsers = createRoute({
  method: 'get',
  path: '/v1/developer/end-users',
  summary: 'Your end users across your apps, most recently seen first (keyset pages)',
  middleware: [requireDeveloper()] as const,
  request: { query: EndUserQuery },
  responses: {
    200: {
      description: 'End users',
      content: json(z.object({ data: z.array(EndUserSchema), next_cursor: z.string().nullable() }).openapi('DeveloperEndUserPage')),
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const payoutList = createRoute({
  method: 'get',
  path: '/v1/developer/payouts',
  summary: 'Your payouts, newest first (keyset pages)',
  middleware: [requireDeveloper()] as const,
  request: { query: PageQuery.extend({ status: payoutStatusSchema.optional() }) },
  responses: {
    200: {
      description: 'Payouts',
      content: json(z.object({ data: z.array(PayoutSchema), next_cursor: z.string().nullable() }).openapi('DeveloperPayoutPage')),
    },
    ...errorResponses(400, 401, 403, 429),
  },
});

const money = (amount: string) => formatUsd(parseDatabaseAmount(amount));

export function registerDeveloperMoneyRoutes(app: ServiceApp): void {
  app.openapi(wallet, async (c) => {
    const found = await getDeveloperWallet(c.var.database().db, c.var.developer.developerId);
    if (!found) throw new FaucetError('not_found', 'wallet not found');
    return c.json(
      {
        wallet_id: found.walletId,
        currency: found.currency,
        balance_usd: formatUsd(found.balanceUsd),
        pending_usd: formatUsd(found.pendingUsd),
        reserved_usd: formatUsd(found.reservedUsd),
        available_usd: formatUsd(found.availableUsd),
      },
      200,
    );
  });

  app.openapi(endUsers, async (c) => {
    const query = c.req.valid('query');
    const developerId = c.var.developer.developerId;
    const { db } = c.var.database();
    let appId: string | null = null;
    if (query.app !== undefined) {
      const [owned] = await db
        .select({ id: apps.id })
        .from(apps)
        .where(and(eq(apps.publicAppId, query.app), eq(apps.developerId, developerId)));
      if (!owned) throw new FaucetError('not_found', 'app not found');
      appId = owned.id;
    }
    const page = await listEndUsers(db, { developerId, appId, limit: query.limit ?? 20, cursor: query.cursor });
    const data = await Promise.all(
      page.rows.map(async (row) => ({
        user_ref: await userRef(c.env.SESSION_HASH_SECRET, row.end_user_id),
        app: row.public_app_id,
        spend_usd: money(row.spend),
        requests: row.requests,
        balance_usd: money(row.balance),
        last_seen_at: row.last_seen_at,
        created_at: row.created_at,
      })),
    );
    return c.json({ data, next_cursor: page.nextCursor }, 200);
  });

  app.openapi(payoutList, async (c) => {
    const query = c.req.valid('query');
    const page = await listDeveloperPayouts(c.var.database().db, {
      developerId: c.var.developer.developerId,
      status: query.status,
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    return c.json({ data: page.rows.map(payoutView), next_cursor: page.nextCursor }, 200);
  });
}
