/**
 * revenue.csv: rated usage summed per UTC day, app and route (docs/payments.md §Reports): what users
 * were charged and how it split between upstream payable, developer revenue and the platform.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '#shared/query.ts';
import type { PagedReport } from './csv-stream.ts';

export interface RevenueReportRow {
  day: string;
  app_id: string;
  app_public_id: string;
  app_name: string;
  route_mode: string;
  requests: string;
  upstream_cost_usd: string;
  retail_usd: string;
  developer_revenue_usd: string;
  platform_share_usd: string;
}

const total = (column: string) => sql.raw(`sum(${column})::numeric(20, 8)::text`);

export const revenueReport: PagedReport<RevenueReportRow> = {
  columns: [
    { name: 'day', value: (row) => row.day },
    { name: 'app_public_id', value: (row) => row.app_public_id },
    { name: 'app_name', value: (row) => row.app_name },
    { name: 'route_mode', value: (row) => row.route_mode },
    { name: 'requests', value: (row) => row.requests, kind: 'number' },
    { name: 'upstream_cost_usd', value: (row) => row.upstream_cost_usd, kind: 'number' },
    { name: 'retail_usd', value: (row) => row.retail_usd, kind: 'number' },
    { name: 'developer_revenue_usd', value: (row) => row.developer_revenue_usd, kind: 'number' },
    { name: 'platform_share_usd', value: (row) => row.platform_share_usd, kind: 'number' },
  ],
  // Keyset over the group key; the scan starts at the cursor's day, not at the beginning.
  page: (db, scope, after, limit) =>
    queryRows<RevenueReportRow>(
      db,
      sql`select to_char(g.day, 'YYYY-MM-DD') as day, g.app_id, a.public_app_id as app_public_id, a.name as app_name,
                 g.route_mode, g.requests::text as requests, g.upstream_cost_usd, g.retail_usd, g.developer_revenue_usd,
                 g.platform_share_usd
          from (
            select date_trunc('day', u.created_at at time zone 'UTC') as day, u.app_id, u.route_mode, count(*) as requests,
                   ${total('u.upstream_cost_usd')} as upstream_cost_usd, ${total('u.retail_usd')} as retail_usd,
                   ${total('u.developer_revenue_usd')} as developer_revenue_usd,
                   ${total('u.platform_share_usd')} as platform_share_usd
            from usage_events u
            where (${scope.from}::timestamptz is null or u.created_at >= ${scope.from}::timestamptz)
              and (${scope.to}::timestamptz is null or u.created_at < ${scope.to}::timestamptz)
              and (${scope.developerId}::uuid is null
                   or u.app_id in (select d.id from apps d where d.developer_id = ${scope.developerId}::uuid))
              and (${after?.day ?? null}::date is null or u.created_at >= (${after?.day ?? null}::date)::timestamp at time zone 'UTC')
            group by 1, 2, 3
          ) g join apps a on a.id = g.app_id
          where ${after?.day ?? null}::date is null
             or (g.day, g.app_id, g.route_mode) > ((${after?.day ?? null}::date)::timestamp, ${after?.app_id ?? null}::uuid,
                                                   ${after?.route_mode ?? null}::text)
          order by g.day, g.app_id, g.route_mode
          limit ${limit}`,
    ),
};
