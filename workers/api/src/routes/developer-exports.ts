/**
 * The developer's CSV exports (docs/developers.md, "Money"): the admin reports of docs/payments.md
 * (same generators, columns, range rules, quoting and formula neutralising, streamed), scoped to the
 * calling developer — usage of their apps, revenue of their apps, their payouts. The scope is the
 * authenticated developer, never a parameter.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { errorResponses } from '#shared/openapi.ts';
import { csvHeaders, streamReport, type PagedReport } from '../reports/csv-stream.ts';
import { payoutsReport } from '../reports/payouts-report.ts';
import { parseReportRange, ReportRangeQuery } from '../reports/report-range.ts';
import { revenueReport } from '../reports/revenue-report.ts';
import { usageReport } from '../reports/usage-report.ts';

function registerExport<Row>(app: ServiceApp, name: string, report: PagedReport<Row>, summary: string): void {
  const route = createRoute({
    method: 'get',
    path: `/v1/developer/exports/${name}.csv`,
    summary: `${summary}; header row, RFC 4180, formula cells neutralised, streamed`,
    middleware: [requireDeveloper()] as const,
    request: { query: ReportRangeQuery },
    responses: {
      200: { description: 'CSV (columns: docs/payments.md, Reports)', content: { 'text/csv': { schema: z.string() } } },
      ...errorResponses(400, 401, 403, 429),
    },
  });
  app.openapi(route, async (c) => {
    const scope = { ...parseReportRange(c.req.valid('query')), developerId: c.var.developer.developerId };
    const body = await streamReport(c.var.database(), report, scope);
    return c.body(body, 200, csvHeaders(name));
  });
}

export function registerDeveloperExportRoutes(app: ServiceApp): void {
  registerExport(app, 'usage', usageReport, "Your apps' usage events as CSV (one line per rated call)");
  registerExport(app, 'revenue', revenueReport, "Your apps' revenue per UTC day, app and route as CSV");
  registerExport(app, 'payouts', payoutsReport, 'Your payouts as CSV');
}
