import { createRoute, z } from '@hono/zod-openapi';
import { and, desc, eq, or, sql } from 'drizzle-orm';
import { usageEvents } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import { bookOwnCalls } from '#shared/wallet/wallet-notices.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { formatUsd, parseDatabaseAmount, usdStringSchema } from '#shared/money/index.ts';
import { routeModeSchema } from '#shared/wire/route-modes.ts';
import { errorResponses } from '#shared/openapi.ts';

const UsageQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,3}$/, 'must be a whole number from 1 to 100')
    .transform(Number)
    .refine((value) => value >= 1 && value <= 100, 'must be a whole number from 1 to 100')
    .optional(),
  request_id: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({ description: 'Only the call with this request ID (the `faucet.request_id` of its answer): a receipt' }),
});

const UsageRecord = z
  .object({
    request_id: z.string(),
    feature_key: z.string(),
    route_mode: routeModeSchema,
    provider: z.string(),
    model: z.string(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    estimated: z.boolean(),
    charged_usd: usdStringSchema,
    created_at: z.string(),
  })
  .openapi('UsageRecord');

const route = createRoute({
  method: 'get',
  path: '/v1/user/usage',
  summary: "The session user's metered calls, newest first",
  middleware: [requireSession()] as const,
  request: { query: UsageQuery },
  responses: {
    200: { description: 'Usage', content: { 'application/json': { schema: z.object({ data: z.array(UsageRecord) }) } } },
    ...errorResponses(400, 401, 429),
  },
});

export function registerUserUsageRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    await bookOwnCalls(c.env, c.var.session.endUserId, c.var.logger);
    const { limit = 20, request_id: requestId } = c.req.valid('query');
    const ofUser = eq(usageEvents.endUserId, c.var.session.endUserId);
    // A receipt: the id the client sent (x-request-id) or the server's own, whichever the answer named.
    const ofRequest =
      requestId === undefined ? undefined : or(eq(usageEvents.clientRequestId, requestId), eq(usageEvents.requestId, requestId));
    // A plain read: the query builder, so the row type is the schema's, not a hand-written copy.
    const rows = await c.var
      .database()
      .db.select({
        requestId: sql<string>`coalesce(${usageEvents.clientRequestId}, ${usageEvents.requestId})`,
        featureKey: usageEvents.featureKey,
        routeMode: usageEvents.routeMode,
        provider: usageEvents.provider,
        model: usageEvents.model,
        inputTokens: usageEvents.inputTokens,
        outputTokens: usageEvents.outputTokens,
        estimated: usageEvents.estimated,
        retailUsd: usageEvents.retailUsd,
        createdAt: usageEvents.createdAt,
      })
      .from(usageEvents)
      .where(and(ofUser, ofRequest))
      .orderBy(desc(usageEvents.createdAt), desc(usageEvents.id))
      .limit(limit);
    const data = rows.map((row) => ({
      request_id: row.requestId,
      feature_key: row.featureKey,
      route_mode: routeModeSchema.parse(row.routeMode),
      provider: row.provider,
      model: row.model,
      input_tokens: row.inputTokens,
      output_tokens: row.outputTokens,
      estimated: row.estimated,
      charged_usd: formatUsd(parseDatabaseAmount(row.retailUsd)),
      created_at: row.createdAt.toISOString(),
    }));
    return c.json({ data }, 200);
  });
}
