import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { withLeaseRecalled } from '#shared/wallet/recall-lease.ts';
import { errorResponses } from '#shared/openapi.ts';
import { handleStripeEvent } from '../payments/handle-stripe-event.ts';
import { liveModeAllowed, verifyStripeEvent } from '../payments/stripe-client.ts';

const Response = z
  .object({
    received: z.literal(true),
    credited: z.boolean().describe('true only when this delivery credited a wallet (a paid checkout or a won dispute)'),
    outcome: z.string(),
  })
  .openapi('StripeWebhookReceipt');

const route = createRoute({
  method: 'post',
  path: '/v1/webhooks/stripe',
  summary:
    'Stripe webhook: verified on the raw body; a paid checkout session credits its wallet exactly once, refunds and disputes of its charge debit it (even below zero) once',
  request: { headers: z.object({ 'stripe-signature': z.string().optional() }) },
  responses: {
    200: { description: 'Acknowledged', content: { 'application/json': { schema: Response } } },
    ...errorResponses(400, 413, 429),
  },
});

export function registerStripeWebhookRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const event = await verifyStripeEvent(c.env, await c.req.text(), c.req.header('stripe-signature'));
    const result = await handleStripeEvent(c.var.database().db, event, {
      requestId: c.var.requestId,
      liveModeAllowed: liveModeAllowed(c.env),
      withLeaseRecalled: (paymentIntentId, debit) =>
        withLeaseRecalled(c.env, c.var.database().db, { paymentIntentId }, c.var.logger, debit),
    });
    c.var.logger.info('stripe webhook', { event_type: event.type, outcome: result.outcome });
    return c.json({ received: true as const, ...result }, 200);
  });
}
