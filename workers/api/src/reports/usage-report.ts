/** usage.csv: one line per usage event (docs/payments.md §Reports), oldest first. */
import { sql } from 'drizzle-orm';
import { queryRows } from '#shared/query.ts';
import type { PagedReport } from './csv-stream.ts';

export interface UsageReportRow {
  created_at: string;
  id: string;
  request_id: string;
  app_public_id: string;
  feature_key: string;
  route_mode: string;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  estimated: boolean;
  upstream_cost_usd: string;
  retail_usd: string;
  developer_revenue_usd: string;
  platform_share_usd: string;
}

export const usageReport: PagedReport<UsageReportRow> = {
  columns: [
    { name: 'created_at', value: (row) => row.created_at },
    { name: 'request_id', value: (row) => row.request_id },
    { name: 'app_public_id', value: (row) => row.app_public_id },
    { name: 'feature_key', value: (row) => row.feature_key },
    { name: 'route_mode', value: (row) => row.route_mode },
    { name: 'provider', value: (row) => row.provider },
    { name: 'model', value: (row) => row.model },
    { name: 'input_tokens', value: (row) => row.input_tokens, kind: 'number' },
    { name: 'output_tokens', value: (row) => row.output_tokens, kind: 'number' },
    { name: 'cached_tokens', value: (row) => row.cached_tokens, kind: 'number' },
    { name: 'estimated', value: (row) => row.estimated, kind: 'number' },
    { name: 'upstream_cost_usd', value: (row) => row.upstream_cost_usd, kind: 'number' },
    { name: 'retail_usd', value: (row) => row.retail_usd, kind: 'number' },
    { name: 'developer_revenue_usd', value: (row) => row.developer_revenue_usd, kind: 'number' },
    { name: 'platform_share_usd', value: (row) => row.platform_share_usd, kind: 'number' },
  ],
  page: (db, scope, after, limit) =>
    queryRows<UsageReportRow>(
      db,
      sql`select to_char(u.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, u.id,
                 coalesce(u.client_request_id, u.request_id) as request_id, a.public_app_id as app_public_id, u.feature_key, u.route_mode, u.provider, u.model,
                 u.input_tokens, u.output_tokens, u.cached_tokens, u.estimated,
                 u.upstream_cost_usd::text as upstream_cost_usd, u.retail_usd::text as retail_usd,
                 u.developer_revenue_usd::text as developer_revenue_usd, u.platform_share_usd::text as platform_share_usd
          from usage_events u join apps a on a.id = u.app_id
          where (${scope.from}::timestamptz is null or u.created_at >= ${scope.from}::timestamptz)
            and (${scope.to}::timestamptz is null or u.created_at < ${scope.to}::timestamptz)
            and (${scope.developerId}::uuid is null or a.developer_id = ${scope.developerId}::uuid)
            and (${after?.created_at ?? null}::timestamptz is null
                 or (u.created_at, u.id) > (${after?.created_at ?? null}::timestamptz, ${after?.id ?? null}::uuid))
          order by u.created_at, u.id
          limit ${limit}`,
    ),
};
