import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { errorResponses } from '#shared/openapi.ts';
import { csvHeaders, streamReport, type PagedReport } from '../reports/csv-stream.ts';
import { payoutsReport } from '../reports/payouts-report.ts';
import { parseReportRange, ReportRangeQuery } from '../reports/report-range.ts';
import { revenueReport } from '../reports/revenue-report.ts';
import { usageReport } from '../reports/usage-report.ts';

function registerReport<Row>(app: ServiceApp, name: string, report: PagedReport<Row>, summary: string): void {
  const route = createRoute({
    method: 'get',
    path: `/v1/admin/reports/${name}.csv`,
    summary: `${summary}; header row, RFC 4180, formula cells neutralised, streamed`,
    middleware: [requireAdmin()] as const,
    request: { query: ReportRangeQuery },
    responses: {
      200: { description: 'CSV (columns: docs/payments.md)', content: { 'text/csv': { schema: z.string() } } },
      ...errorResponses(400, 401, 429),
    },
  });
  app.openapi(route, async (c) => {
    const scope = { ...parseReportRange(c.req.valid('query')), developerId: null };
    const body = await streamReport(c.var.database(), report, scope);
    return c.body(body, 200, csvHeaders(name));
  });
}

export function registerAdminReportRoutes(app: ServiceApp): void {
  registerReport(app, 'usage', usageReport, 'Usage events as CSV (one line per rated call)');
  registerReport(app, 'revenue', revenueReport, 'Revenue per UTC day, app and route as CSV');
  registerReport(app, 'payouts', payoutsReport, 'Payouts as CSV');
}
