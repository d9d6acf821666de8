/**
 * The request log per local day (docs/request-log.md, "Per day"): calls, errors (the outcomes a
 * user would call a failure: upstream_error, refused, cut) and latency percentiles of total_ms, for
 * the developer's own apps only. One statement over `gateway_call_log`, each app's rows read through
 * its own (app_id, created_at) index (a walk of the table's time index would read every other
 * developer's calls of the range first); every day of the range present (zeros included), so a chart
 * needs no filling in.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';

export interface CallStatsDay {
  /** Local day in the time zone asked for, YYYY-MM-DD. */
  day: string;
  calls: number;
  errors: number;
  upstream_errors: number;
  refused: number;
  cut: number;
  /** Milliseconds, one decimal; null: no call of that day has a total time. */
  p50_ms: number | null;
  p95_ms: number | null;
}

/** `from`/`to` are checked calendar days and `timeZone` a checked zone name: they are bound, never spliced. */
export async function callStatsByDay(
  db: SqlDatabase,
  query: { developerId: string; appId: string | null; from: string; to: string; timeZone: string },
): Promise<CallStatsDay[]> {
  const app = query.appId === null ? sql`` : sql`and a.id = ${query.appId}::uuid`;
  return queryRows<CallStatsDay>(
    db,
    sql`with days as (
          select day::date as day from generate_series(${query.from}::date, ${query.to}::date, interval '1 day') as day
        ), calls as (
          select (l.created_at at time zone ${query.timeZone})::date as day, l.outcome, l.total_ms
            from apps a cross join lateral (
              select l.created_at, l.outcome, l.total_ms from gateway_call_log l
               where l.app_id = a.id
                 and l.created_at >= (${query.from}::date::timestamp at time zone ${query.timeZone})
                 and l.created_at < ((${query.to}::date + 1)::timestamp at time zone ${query.timeZone})
            ) l
           where a.developer_id = ${query.developerId}::uuid ${app}
        )
        select to_char(d.day, 'YYYY-MM-DD') as day,
               count(c.day)::integer as calls,
               count(*) filter (where c.outcome in ('upstream_error', 'refused', 'cut'))::integer as errors,
               count(*) filter (where c.outcome = 'upstream_error')::integer as upstream_errors,
               count(*) filter (where c.outcome = 'refused')::integer as refused,
               count(*) filter (where c.outcome = 'cut')::integer as cut,
               round((percentile_cont(0.5) within group (order by c.total_ms))::numeric, 1)::float8 as p50_ms,
               round((percentile_cont(0.95) within group (order by c.total_ms))::numeric, 1)::float8 as p95_ms
          from days d left join calls c on c.day = d.day
         group by d.day
         order by d.day`,
  );
}
