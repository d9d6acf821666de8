import { createRoute, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ServiceApp } from '#shared/app.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { queryRows } from '#shared/ledger/index.ts';
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

interface Row {
  request_id: string;
  feature_key: string;
  route_mode: z.infer<typeof UsageRecord>['route_mode'];
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  retail_usd: string;
  created_at: Date | string;
}

export function registerUserUsageRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const limit = c.req.valid('query').limit ?? 20;
    const rows = await queryRows<Row>(
      c.var.database().db,
      sql`select coalesce(client_request_id, request_id) as request_id, feature_key, route_mode, provider, model, input_tokens, output_tokens, estimated,
                 retail_usd::numeric(20, 8) as retail_usd, created_at
          from usage_events where end_user_id = ${c.var.session.endUserId}::uuid
          order by created_at desc, id desc limit ${limit}`,
    );
    const data = rows.map((row) => ({
      request_id: row.request_id,
      feature_key: row.feature_key,
      route_mode: row.route_mode,
      provider: row.provider,
      model: row.model,
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      estimated: row.estimated,
      charged_usd: formatUsd(parseDatabaseAmount(row.retail_usd)),
      created_at: new Date(row.created_at).toISOString(),
    }));
    return c.json({ data }, 200);
  });
}
