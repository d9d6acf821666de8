/**
 * The session user's Stripe top-ups: start one (a Checkout Session for their own wallet), and read
 * one back by its id, so a page returning from Stripe can wait for the webhook's credit. Only the
 * session's wallet's checkouts are visible; any other id is `not_found`.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { checkoutSessions } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { formatUsd, usdStringSchema, wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { MAX_TOP_UP_USD, MIN_TOP_UP_USD, parseTopUpAmount, topUpAmountOfCents } from '../payments/checkout-amount.ts';
import { createCheckoutSession } from '../payments/create-checkout-session.ts';

const Body = z
  .strictObject({
    amount_usd: wireAmountSchema.describe(`Whole cents between ${MIN_TOP_UP_USD} and ${MAX_TOP_UP_USD}`),
    return_url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
  })
  .openapi('CreateCheckoutSessionRequest');

const Response = z
  .object({
    checkout_session_id: z.string(),
    url: z.string(),
    amount_usd: usdStringSchema,
    amount_cents: z.number().int(),
    currency: z.literal('USD'),
    status: z.literal('pending'),
    expires_at: z.string().nullable(),
  })
  .openapi('CheckoutSession');

const route = createRoute({
  method: 'post',
  path: '/v1/user/stripe/checkout-sessions',
  summary: "Start a Stripe Checkout top-up of the session user's wallet (test mode)",
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: Body } } } },
  responses: {
    201: { description: 'Checkout session created; send the buyer to `url`', content: { 'application/json': { schema: Response } } },
    ...errorResponses(400, 401, 403, 429, 502),
  },
});

const StatusResponse = z
  .object({
    checkout_session_id: z.string(),
    amount_usd: usdStringSchema,
    amount_cents: z.number().int(),
    currency: z.literal('USD'),
    status: z.enum(['pending', 'completed', 'expired']).openapi({ description: '`completed` once the webhook credited the wallet' }),
    created_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .openapi('CheckoutSessionStatus');

const statusRoute = createRoute({
  method: 'get',
  path: '/v1/user/stripe/checkout-sessions/{checkout_session_id}',
  summary: "A top-up of the session user's wallet: pending until Stripe's webhook credited it",
  middleware: [requireSession()] as const,
  request: { params: z.object({ checkout_session_id: z.string().min(1).max(255) }) },
  responses: {
    200: { description: 'The checkout session', content: { 'application/json': { schema: StatusResponse } } },
    ...errorResponses(401, 404, 429),
  },
});

export function registerUserStripeCheckoutRoutes(app: ServiceApp): void {
  app.openapi(statusRoute, async (c) => {
    const { checkout_session_id: id } = c.req.valid('param');
    const [row] = await c.var
      .database()
      .db.select()
      .from(checkoutSessions)
      .where(and(eq(checkoutSessions.stripeSessionId, id), eq(checkoutSessions.walletId, c.var.session.walletId)))
      .limit(1);
    if (!row) throw new FaucetError('not_found', 'checkout session not found');
    return c.json(
      {
        checkout_session_id: row.stripeSessionId,
        amount_usd: formatUsd(topUpAmountOfCents(row.amountCents)),
        amount_cents: row.amountCents,
        currency: 'USD' as const,
        status: StatusResponse.shape.status.parse(row.status),
        created_at: row.createdAt.toISOString(),
        completed_at: row.completedAt ? row.completedAt.toISOString() : null,
      },
      200,
    );
  });

  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    const { amount, cents } = parseTopUpAmount(body.amount_usd);
    const returnUrl = body.return_url ?? c.env.CHECKOUT_RETURN_URL ?? c.env.API_BASE_URL;
    if (typeof returnUrl !== 'string' || !URL.canParse(returnUrl)) {
      throw new FaucetError('invalid_request', 'return_url is required on this deployment');
    }
    const checkout = await createCheckoutSession(c.env, c.var.database().db, {
      walletId: c.var.session.walletId,
      amountCents: cents,
      returnUrl,
      requestId: c.var.requestId,
    });
    return c.json(
      {
        checkout_session_id: checkout.stripeSessionId,
        url: checkout.url,
        amount_usd: formatUsd(amount),
        amount_cents: cents,
        currency: 'USD' as const,
        status: 'pending' as const,
        expires_at: checkout.expiresAt,
      },
      201,
    );
  });
}
