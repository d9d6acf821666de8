/**
 * `GET /v1/developer/usage` (docs/developers.md, "Usage"): the calling developer's usage by local day ×
 * app × feature × model × provider × route, with the totals of the whole range, a page at a time.
 * Read from the usage rollup plus the events not folded yet (`#shared/usage/developer-usage.ts`), so
 * it is exact and does not scan raw events. Only the developer's own apps are ever read.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { queryDeveloperUsage } from '#shared/usage/developer-usage.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { DeveloperUsageQuery, decodeUsageCursor, encodeUsageCursor, parseTimeZone, parseUsageRange } from './developer-usage-query.ts';

const amounts = {
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  retail_usd: usdStringSchema.openapi({ description: 'Charged to end users' }),
  developer_revenue_usd: usdStringSchema.openapi({ description: 'Credited to you' }),
  upstream_cost_usd: usdStringSchema.openapi({ description: 'What the provider charges for these tokens' }),
};

const DeveloperUsageRow = z
  .object({
    day: z.string().openapi({ description: 'Local day in tz, YYYY-MM-DD' }),
    public_app_id: z.string(),
    feature_key: z.string(),
    model: z.string(),
    provider: z.string(),
    route_mode: z.string(),
    ...amounts,
  })
  .openapi('DeveloperUsageRow');

const DeveloperUsagePage = z
  .object({
    from: z.string(),
    to: z.string(),
    tz: z.string(),
    data: z.array(DeveloperUsageRow).openapi({ description: 'Ordered by day, public_app_id, feature_key, model, provider, route_mode' }),
    totals: z.object(amounts).openapi({ description: 'The whole range (every page), not only this page' }),
    next_cursor: z.string().nullable(),
  })
  .openapi('DeveloperUsagePage');

const route = createRoute({
  method: 'get',
  path: '/v1/developer/usage',
  summary: 'Your usage by day, app, feature, model and route, with calls, tokens, retail, your revenue and upstream cost',
  middleware: [requireDeveloper()] as const,
  request: { query: DeveloperUsageQuery },
  responses: {
    200: {
      description: 'A page of usage rows and the totals of the range',
      content: { 'application/json': { schema: DeveloperUsagePage } },
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export function registerDeveloperUsageRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const query = c.req.valid('query');
    const range = parseUsageRange(query);
    const timeZone = parseTimeZone(query.tz);
    const after = decodeUsageCursor(query.cursor);
    const page = await queryDeveloperUsage(c.var.database().db, {
      developerId: c.var.developer.developerId,
      ...range,
      timeZone,
      publicAppId: query.app,
      limit: query.limit ?? 100,
      after,
    });
    // Another developer's app answers exactly like an app that does not exist.
    if (query.app !== undefined && !page.appFound) throw new FaucetError('not_found', 'app not found');
    return c.json(
      {
        ...range,
        tz: timeZone,
        data: page.rows,
        totals: page.totals,
        next_cursor: page.nextKey ? encodeUsageCursor(page.nextKey) : null,
      },
      200,
    );
  });
}
