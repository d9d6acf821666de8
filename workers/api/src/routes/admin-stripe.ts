/**
 * The operator's view of Stripe (docs/payments.md): the webhook events the API processed (newest
 * first), and the replay of one checkout session — the admin form of `npm run webhook:replay`, but
 * safer: it forges nothing. It retrieves the session from Stripe and credits it exactly as a paid
 * completion event would (once; unpaid, unknown or already credited sessions credit nothing), so a
 * lost or failed webhook delivery can be recovered from the console.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { desc } from 'drizzle-orm';
import Stripe from 'stripe';
import { processedWebhookEvents } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { errorResponses } from '#shared/openapi.ts';
import { creditPaidCheckout } from '../payments/handle-stripe-event.ts';
import { createStripeClient } from '../payments/stripe-client.ts';

const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } } });

/** Event ids the replay writes: told apart from Stripe's own `evt_…` in the list. */
const REPLAY_PREFIX = 'evt_replay_';

const WebhookEvent = z
  .object({
    event_id: z.string(),
    type: z.string(),
    source: z.enum(['stripe', 'replay']).openapi({ description: '`replay`: written by the operator replay below' }),
    received_at: z.string(),
  })
  .openapi('ProcessedWebhookEvent');

const listEvents = createRoute({
  method: 'get',
  path: '/v1/admin/stripe/webhook-events',
  summary: 'Stripe webhook events the API processed (each credited or booked at most once), newest first',
  middleware: [requireAdmin()] as const,
  request: {
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
  },
  responses: {
    200: { description: 'Events', ...json(z.object({ data: z.array(WebhookEvent) }).openapi('ProcessedWebhookEventList')) },
    ...errorResponses(400, 401, 429),
  },
});

const ReplayResult = z
  .object({
    checkout_session_id: z.string(),
    stripe_status: z.string().nullable().openapi({ description: "The session's status at Stripe (open, complete, expired)" }),
    payment_status: z.string(),
    amount_cents: z.number().int().nullable(),
    credited: z.boolean().openapi({ description: 'true only when this replay credited the wallet' }),
    outcome: z.string().openapi({
      description:
        'credited, already_completed, payment_not_completed, unknown_session (Stripe knows it, Faucet does not), amount_mismatch, ignored',
    }),
    event_id: z.string().nullable().openapi({ description: 'The replay event recorded with the credit, when one was recorded' }),
  })
  .openapi('WebhookReplayResult');

const replay = createRoute({
  method: 'post',
  path: '/v1/admin/stripe/checkout-sessions/{checkout_session_id}/replay',
  summary: 'Replay a checkout completion from Stripe itself: retrieve the session and credit it once if it is paid',
  middleware: [requireAdmin()] as const,
  request: {
    params: z.object({
      checkout_session_id: z
        .string()
        .regex(/^cs_[A-Za-z0-9_]{1,250}$/, 'must be a Stripe checkout session id (cs_…)')
        .openapi({ param: { name: 'checkout_session_id', in: 'path' } }),
    }),
  },
  responses: { 200: { description: 'What the replay did', ...json(ReplayResult) }, ...errorResponses(400, 401, 403, 404, 429, 502) },
});

async function retrieveSession(stripe: Stripe, id: string): Promise<Stripe.Checkout.Session> {
  try {
    return await stripe.checkout.sessions.retrieve(id);
  } catch (error) {
    if (error instanceof Stripe.errors.StripeError && error.statusCode === 404) {
      throw new FaucetError('not_found', 'Stripe has no such checkout session', { cause: error });
    }
    throw new FaucetError('upstream_error', 'The payment provider could not be asked about the checkout session', { cause: error });
  }
}

export function registerAdminStripeRoutes(app: ServiceApp): void {
  app.openapi(listEvents, async (c) => {
    const { limit } = c.req.valid('query');
    const rows = await c.var
      .database()
      .db.select()
      .from(processedWebhookEvents)
      .orderBy(desc(processedWebhookEvents.receivedAt), desc(processedWebhookEvents.eventId))
      .limit(limit);
    const data = rows.map((row) => ({
      event_id: row.eventId,
      type: row.type,
      source: row.eventId.startsWith(REPLAY_PREFIX) ? ('replay' as const) : ('stripe' as const),
      received_at: row.receivedAt.toISOString(),
    }));
    return c.json({ data }, 200);
  });

  app.openapi(replay, async (c) => {
    const { checkout_session_id: id } = c.req.valid('param');
    const session = await retrieveSession(createStripeClient(c.env), id);
    const eventId = `${REPLAY_PREFIX}${crypto.randomUUID().replaceAll('-', '')}`;
    const result = await creditPaidCheckout(
      c.var.database().db,
      { eventId, eventType: 'checkout.session.completed', session },
      c.var.requestId,
    );
    c.var.logger.info('stripe checkout replay', { outcome: result.outcome });
    const recorded = result.outcome === 'credited' || result.outcome === 'already_completed' || result.outcome === 'amount_mismatch';
    return c.json(
      {
        checkout_session_id: session.id,
        stripe_status: session.status ?? null,
        payment_status: session.payment_status,
        amount_cents: session.amount_total ?? null,
        credited: result.credited,
        outcome: result.outcome,
        event_id: recorded ? eventId : null,
      },
      200,
    );
  });
}
