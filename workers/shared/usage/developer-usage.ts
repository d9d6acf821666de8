/**
 * A developer's usage by local day × app × feature × model × provider × route (docs/developers.md,
 * "Usage"), read from the rollups (migrations 0012, 0017) and exact at any moment:
 *
 * - the range's totals from the app-day totals (`usage_rollup_app_daily`, a row per app and day) over
 *   the whole UTC hours inside the range, plus their pending events, plus the raw events of the at most
 *   two hours the range's edges cut;
 * - the page from a window of local days starting at the cursor's day, sized by the rollup's per-day
 *   group count: an hour wholly inside one local day of `tz` is taken from `usage_rollup_daily` (plus
 *   its events not folded yet), an hour a local day boundary cuts (sub-hour offsets such as
 *   Asia/Kolkata, a half-hour DST shift) from its raw events, through the index on (app, time).
 *
 * So a request reads a few days of group rows, not the range's; a window that comes up short is
 * followed by the next days. DST days come right because PostgreSQL maps each hour to its local day.
 */
import { type SQL, sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';
import { formatUsd, parseDatabaseAmount } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';

/** The stable order of the rows, and what the cursor carries: the last row's key. */
export interface UsageKey {
  day: string;
  publicAppId: string;
  featureKey: string;
  model: string;
  provider: string;
  routeMode: string;
}

export interface UsageQuery {
  developerId: string;
  /** Inclusive local days, YYYY-MM-DD, validated by the caller. */
  from: string;
  to: string;
  /** An IANA time zone name PostgreSQL knows, validated by the caller. */
  timeZone: string;
  publicAppId?: string | undefined;
  limit: number;
  after?: UsageKey | undefined;
}

export interface UsageAmounts {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  retail_usd: string;
  developer_revenue_usd: string;
  upstream_cost_usd: string;
}

export interface UsageGroup extends UsageAmounts {
  day: string;
  public_app_id: string;
  feature_key: string;
  model: string;
  provider: string;
  route_mode: string;
}

export interface UsagePage {
  /** Whether the developer has an app matching the filter (with `publicAppId`: that app is theirs). */
  appFound: boolean;
  rows: UsageGroup[];
  totals: UsageAmounts;
  nextKey: UsageKey | null;
}

/** The one statement's row: the totals of the range on every row, a page row's columns when there is one. */
interface UsageRow {
  day: string | null;
  public_app_id: string | null;
  feature_key: string | null;
  model: string | null;
  provider: string | null;
  route_mode: string | null;
  calls: string | null;
  input_tokens: string | null;
  output_tokens: string | null;
  retail_usd: string | null;
  developer_revenue_usd: string | null;
  upstream_cost_usd: string | null;
  total_calls: string;
  total_input_tokens: string;
  total_output_tokens: string;
  total_retail_usd: string;
  total_developer_revenue_usd: string;
  total_upstream_cost_usd: string;
  app_found: boolean;
  /** The last local day the statement's page looked at. */
  window_last_day: string;
}

const usd = (value: string | null) => formatUsd(parseDatabaseAmount(value ?? ''));

/** One statement's page: the rows of local days `windowFrom`.. (after the cursor), and the range's totals. */
interface PageRequest {
  /** The first local day this statement looks at: the cursor's day, or the range's first day. */
  windowFrom: string;
  after: UsageKey | undefined;
  /** Rows wanted (the caller asks one more than it shows, to know whether a next page exists). */
  rows: number;
  /** Whether to compute the range's totals (the first statement of a request does; a follow-up does not). */
  withTotals: boolean;
}

/** The one statement: the range's totals on every row, then the page's rows in order. */
function usageStatement(query: UsageQuery, request: PageRequest): SQL {
  const { from, to, timeZone: tz } = query;
  const { after, windowFrom } = request;
  return sql`
    with dev_apps as materialized (
      select a.id, a.public_app_id from apps a
       where a.developer_id = ${query.developerId}::uuid
         and (${query.publicAppId ?? null}::text is null or a.public_app_id = ${query.publicAppId ?? null}::text)
    ), edges as materialized (
      -- The range's instants [start_at, end_at) and the whole UTC hours inside them [first_at, last_at).
      select e.start_at, e.end_at,
             date_trunc('hour', e.start_at, 'UTC')
               + case when date_trunc('hour', e.start_at, 'UTC') = e.start_at then interval '0' else interval '1 hour' end as first_at,
             date_trunc('hour', e.end_at, 'UTC') as last_at
        from (select ${from}::date::timestamp at time zone ${tz} as start_at,
                     (${to}::date + 1)::timestamp at time zone ${tz} as end_at) e
    ), total_days as materialized (
      -- Totals: the UTC days of the whole hours and, per day, the run [first_hour, end_hour) they cover.
      -- A local day boundary inside the range splits nothing here: only the range's two edges matter.
      select d.midnight::date as day,
             case when d.midnight::date = (g.first_at at time zone 'UTC')::date
                  then extract(hour from g.first_at at time zone 'UTC')::integer else 0 end as first_hour,
             case when d.midnight::date = (g.last_at at time zone 'UTC')::date
                  then extract(hour from g.last_at at time zone 'UTC')::integer else 24 end as end_hour
        from edges g
       cross join generate_series((g.first_at at time zone 'UTC')::date::timestamp,
                                  ((g.last_at - interval '1 hour') at time zone 'UTC')::date::timestamp, interval '1 day') as d(midnight)
       where ${request.withTotals}::boolean
    ), total_parts as (
      -- Whole hours from the app-day totals (a row per app and day, not per group)…
      select sum(r.calls[t.end_hour + 1] - r.calls[t.first_hour + 1]) as calls,
             sum(r.input_tokens[t.end_hour + 1] - r.input_tokens[t.first_hour + 1]) as input_tokens,
             sum(r.output_tokens[t.end_hour + 1] - r.output_tokens[t.first_hour + 1]) as output_tokens,
             sum(r.retail_usd[t.end_hour + 1] - r.retail_usd[t.first_hour + 1]) as retail_usd,
             sum(r.developer_revenue_usd[t.end_hour + 1] - r.developer_revenue_usd[t.first_hour + 1]) as developer_revenue_usd,
             sum(r.upstream_cost_usd[t.end_hour + 1] - r.upstream_cost_usd[t.first_hour + 1]) as upstream_cost_usd
        from usage_rollup_app_daily r join total_days t on t.day = r.day
       where r.app_id in (select id from dev_apps)
         and r.day between (select min(day) from total_days) and (select max(day) from total_days)
      union all
      -- …plus, of the whole hours, the events not folded yet…
      select count(*), sum(e.input_tokens), sum(e.output_tokens), sum(e.retail_usd), sum(e.developer_revenue_usd),
             sum(e.upstream_cost_usd)
        from usage_rollup_pending p cross join edges g
        join usage_events e on e.id = p.usage_event_id
       where ${request.withTotals}::boolean and p.app_id in (select id from dev_apps)
         and p.created_at >= g.first_at and p.created_at < g.last_at
      union all
      -- …plus every event of the range's cut edges (zones with sub-hour offsets), folded or not.
      select count(*), sum(e.input_tokens), sum(e.output_tokens), sum(e.retail_usd), sum(e.developer_revenue_usd),
             sum(e.upstream_cost_usd)
        from dev_apps a cross join edges g
       cross join lateral (
         select * from usage_events u
          where u.app_id = a.id and u.created_at >= g.start_at and u.created_at < g.first_at
         union all
         select * from usage_events u
          where u.app_id = a.id and u.created_at >= g.last_at and u.created_at < g.end_at) e
       where ${request.withTotals}::boolean
    ), page_window as materialized (
      -- The local days this page reads: from the cursor's day until the rollup holds enough rows (its
      -- per-day row count), and a day more for zones west of UTC. Too short only costs a follow-up.
      select ${windowFrom}::date as first_day,
             least(${to}::date, coalesce((
               select min(c.day) + 1 from (
                 select k.day, sum(sum(k.keys)) over (order by k.day) as rows_so_far
                   from usage_rollup_app_daily k
                  where k.app_id in (select id from dev_apps) and k.day between ${windowFrom}::date and ${to}::date
                  group by k.day) c
                where c.rows_so_far >= ${request.rows}), ${to}::date)) as last_day
    ), bounds as materialized (
      -- Every instant of the window, and then some: a DST shift moves a day's edge by at most 2 hours.
      select (w.first_day::timestamp at time zone ${tz}) - interval '3 hours' as start_at,
             ((w.last_day + 1)::timestamp at time zone ${tz}) + interval '3 hours' as end_at
        from page_window w
    ), hours as materialized (
      -- Each UTC hour of the UTC days concerned: its local day, and whether it lies wholly inside it.
      select d.midnight::date as utc_day, k.hour, h.at, (h.at at time zone ${tz})::date as local_day,
             (h.at at time zone ${tz})::date = ((h.at + interval '1 hour' - interval '1 microsecond') at time zone ${tz})::date
             and ((h.at + interval '1 hour' - interval '1 microsecond') at time zone ${tz}) - (h.at at time zone ${tz})
                 = interval '1 hour' - interval '1 microsecond' as whole
        from bounds b
       cross join generate_series((b.start_at at time zone 'UTC')::date::timestamp, (b.end_at at time zone 'UTC')::date::timestamp, interval '1 day') as d(midnight)
       cross join generate_series(0, 23) as k(hour)
       cross join lateral (select (d.midnight + k.hour * interval '1 hour') at time zone 'UTC' as at) h
    ), runs as materialized (
      -- Runs of consecutive whole hours of one UTC day in one local day of the window: [first_hour, end_hour).
      select utc_day, local_day, min(hour) as first_hour, max(hour) + 1 as end_hour
        from (select utc_day, local_day, hour, hour - row_number() over (partition by utc_day, local_day order by hour) as island
                from hours where whole) w
       where local_day between (select first_day from page_window) and (select last_day from page_window)
       group by utc_day, local_day, island
    ), folded as (
      select * from (
        select ru.local_day as day, r.app_id, r.feature_key, r.provider, r.model, r.route_mode,
               r.calls[ru.end_hour + 1] - r.calls[ru.first_hour + 1] as calls,
               r.input_tokens[ru.end_hour + 1] - r.input_tokens[ru.first_hour + 1] as input_tokens,
               r.output_tokens[ru.end_hour + 1] - r.output_tokens[ru.first_hour + 1] as output_tokens,
               r.retail_usd[ru.end_hour + 1] - r.retail_usd[ru.first_hour + 1] as retail_usd,
               r.developer_revenue_usd[ru.end_hour + 1] - r.developer_revenue_usd[ru.first_hour + 1] as developer_revenue_usd,
               r.upstream_cost_usd[ru.end_hour + 1] - r.upstream_cost_usd[ru.first_hour + 1] as upstream_cost_usd
          from usage_rollup_daily r join runs ru on ru.utc_day = r.day
         where r.app_id in (select id from dev_apps)
           and r.day between (select min(utc_day) from runs) and (select max(utc_day) from runs)) t
       where t.calls > 0
    ), raw_events as (
      -- Hours a local day boundary cuts: every event, folded or not.
      select e.created_at, e.app_id, e.feature_key, e.provider, e.model, e.route_mode, e.input_tokens, e.output_tokens,
             e.retail_usd, e.developer_revenue_usd, e.upstream_cost_usd
        from hours hr
       cross join dev_apps a
       cross join lateral (
         -- Per app and hour: an index range scan on (app_id, created_at), never a scan of the table
         -- (offset 0 keeps the planner from flattening it into a join).
         select * from usage_events u where u.app_id = a.id and u.created_at >= hr.at and u.created_at < hr.at + interval '1 hour'
         offset 0) e
       where not hr.whole and hr.at < (select end_at from bounds) and hr.at + interval '1 hour' > (select start_at from bounds)
      union all
      -- Whole hours: the events the rollup has not folded yet.
      select e.created_at, e.app_id, e.feature_key, e.provider, e.model, e.route_mode, e.input_tokens, e.output_tokens,
             e.retail_usd, e.developer_revenue_usd, e.upstream_cost_usd
        from usage_rollup_pending p
        join hours hr on hr.at = date_trunc('hour', p.created_at, 'UTC') and hr.whole
        join usage_events e on e.id = p.usage_event_id
       where p.app_id in (select id from dev_apps)
         and p.created_at >= (select start_at from bounds) and p.created_at < (select end_at from bounds)
    ), raw as (
      select (e.created_at at time zone ${tz})::date as day, e.app_id, e.feature_key, e.provider, e.model, e.route_mode,
             1::bigint as calls, e.input_tokens::bigint, e.output_tokens::bigint, e.retail_usd, e.developer_revenue_usd,
             e.upstream_cost_usd
        from raw_events e
    ), groups as (
      select u.day, a.public_app_id, u.feature_key, u.model, u.provider, u.route_mode,
             sum(u.calls) as calls, sum(u.input_tokens) as input_tokens, sum(u.output_tokens) as output_tokens,
             sum(u.retail_usd) as retail_usd, sum(u.developer_revenue_usd) as developer_revenue_usd,
             sum(u.upstream_cost_usd) as upstream_cost_usd
        from (select * from folded union all select * from raw) u
        join dev_apps a on a.id = u.app_id
       where u.day between (select first_day from page_window) and (select last_day from page_window)
       group by u.day, a.public_app_id, u.feature_key, u.model, u.provider, u.route_mode
    ), page as (
      select * from groups g
       where ${after === undefined}::boolean
          or (g.day, g.public_app_id collate "C", g.feature_key collate "C", g.model collate "C", g.provider collate "C",
              g.route_mode collate "C")
             > (${after?.day ?? null}::date, ${after?.publicAppId ?? null}::text collate "C", ${after?.featureKey ?? null}::text collate "C",
                ${after?.model ?? null}::text collate "C", ${after?.provider ?? null}::text collate "C",
                ${after?.routeMode ?? null}::text collate "C")
       order by g.day, g.public_app_id collate "C", g.feature_key collate "C", g.model collate "C", g.provider collate "C",
                g.route_mode collate "C"
       limit ${request.rows}
    ), totals as (
      select coalesce(sum(calls), 0)::bigint as total_calls, coalesce(sum(input_tokens), 0)::bigint as total_input_tokens,
             coalesce(sum(output_tokens), 0)::bigint as total_output_tokens,
             coalesce(sum(retail_usd), 0)::numeric(20, 8)::text as total_retail_usd,
             coalesce(sum(developer_revenue_usd), 0)::numeric(20, 8)::text as total_developer_revenue_usd,
             coalesce(sum(upstream_cost_usd), 0)::numeric(20, 8)::text as total_upstream_cost_usd,
             exists (select 1 from dev_apps) as app_found,
             (select to_char(last_day::timestamp, 'YYYY-MM-DD') from page_window) as window_last_day
        from total_parts
    )
    select to_char(p.day::timestamp, 'YYYY-MM-DD') as day, p.public_app_id, p.feature_key, p.model, p.provider, p.route_mode,
           p.calls::bigint as calls, p.input_tokens::bigint as input_tokens, p.output_tokens::bigint as output_tokens,
           p.retail_usd::numeric(20, 8)::text as retail_usd, p.developer_revenue_usd::numeric(20, 8)::text as developer_revenue_usd,
           p.upstream_cost_usd::numeric(20, 8)::text as upstream_cost_usd, t.*
      from totals t left join page p on true
     order by p.day, p.public_app_id collate "C", p.feature_key collate "C", p.model collate "C", p.provider collate "C",
              p.route_mode collate "C"`;
}

const nextDay = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

async function runStatement(db: SqlDatabase, query: UsageQuery, request: PageRequest): Promise<UsageRow[]> {
  return queryRows<UsageRow>(db, usageStatement(query, request)).catch((error: unknown) => {
    // 22023: a zone name the caller's check let through but PostgreSQL does not know.
    if (FaucetError.isInstance(error) && (error.cause as { code?: unknown } | undefined)?.code === '22023') {
      throw new FaucetError('invalid_request', `tz: unknown time zone ${JSON.stringify(query.timeZone)}`, { cause: error });
    }
    throw error;
  });
}

/**
 * The page and the totals. Usually one statement: its window of days holds enough rows. When it did
 * not (sparse usage, or rows the window's estimate counted that the cursor skips), the next days are
 * asked for the rest, without totals, until the page is full or the range ends.
 */
export async function queryDeveloperUsage(db: SqlDatabase, query: UsageQuery): Promise<UsagePage> {
  const wanted = query.limit + 1;
  const rows = await runStatement(db, query, {
    windowFrom: query.after?.day ?? query.from,
    after: query.after,
    rows: wanted,
    withTotals: true,
  });
  let pageRows = rows.filter((row) => row.day !== null).length;
  let windowLastDay = rows[0]?.window_last_day;
  while (windowLastDay !== undefined && pageRows < wanted && windowLastDay < query.to) {
    const more = await runStatement(db, query, {
      windowFrom: nextDay(windowLastDay),
      after: undefined,
      rows: wanted - pageRows,
      withTotals: false,
    });
    const found = more.filter((row) => row.day !== null);
    rows.push(...found);
    pageRows += found.length;
    windowLastDay = more[0]?.window_last_day;
  }
  const first = rows[0];
  if (!first) throw new Error('usage query returned no totals row');
  const groups: UsageGroup[] = rows
    .filter((row) => row.day !== null)
    .map((row) => ({
      day: row.day as string,
      public_app_id: row.public_app_id as string,
      feature_key: row.feature_key as string,
      model: row.model as string,
      provider: row.provider as string,
      route_mode: row.route_mode as string,
      calls: Number(row.calls),
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
      retail_usd: usd(row.retail_usd),
      developer_revenue_usd: usd(row.developer_revenue_usd),
      upstream_cost_usd: usd(row.upstream_cost_usd),
    }));
  const shown = groups.slice(0, query.limit);
  const last = shown.at(-1);
  return {
    appFound: first.app_found,
    rows: shown,
    totals: {
      calls: Number(first.total_calls),
      input_tokens: Number(first.total_input_tokens),
      output_tokens: Number(first.total_output_tokens),
      retail_usd: usd(first.total_retail_usd),
      developer_revenue_usd: usd(first.total_developer_revenue_usd),
      upstream_cost_usd: usd(first.total_upstream_cost_usd),
    },
    nextKey:
      groups.length > query.limit && last
        ? {
            day: last.day,
            publicAppId: last.public_app_id,
            featureKey: last.feature_key,
            model: last.model,
            provider: last.provider,
            routeMode: last.route_mode,
          }
        : null,
  };
}
