-- The current definition of faucet_roll_up_usage (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Housekeeping (API cron): fold at most p_limit of the usage events not rolled up yet into
-- usage_rollup_daily and return how many were folded. Reads are exact without it (they add the pending
-- events); it keeps the pending list short. An event leaves the list and joins its day's running sums
-- in one transaction, so a reader sees it in exactly one of the two. One fold at a time: a second
-- caller returns 0 at once. The app-day totals (`usage_rollup_app_daily`, migration 0017) of every
-- day the fold touched are recomputed from the rollup in the same transaction, so they always equal it.
create or replace function faucet_roll_up_usage(p_limit integer default 100000) returns integer
language plpgsql as $$
declare
  v_count integer;
  v_apps uuid[];
  v_days date[];
begin
  if not pg_try_advisory_xact_lock(hashtext('faucet_roll_up_usage')) then
    return 0;
  end if;
  with moved as (
    delete from usage_rollup_pending p
     where p.usage_event_id in (select usage_event_id from usage_rollup_pending limit p_limit)
    returning p.usage_event_id
  ), hourly as (
    select (e.created_at at time zone 'UTC')::date as day, extract(hour from e.created_at at time zone 'UTC')::integer as hour,
           e.app_id, e.feature_key, e.provider, e.model, e.route_mode,
           count(*) as calls, sum(e.input_tokens) as input_tokens, sum(e.output_tokens) as output_tokens,
           sum(e.retail_usd) as retail_usd, sum(e.developer_revenue_usd) as developer_revenue_usd,
           sum(e.upstream_cost_usd) as upstream_cost_usd
      from moved m join usage_events e on e.id = m.usage_event_id
     group by 1, 2, 3, 4, 5, 6, 7
  ), positions as (
    -- Position i (0..24) of a day's running sums takes every hour before i: an hour's sums sit at
    -- position hour + 1, and zero rows make every position of the day exist (no join to fill gaps).
    select day, app_id, feature_key, provider, model, route_mode, hour + 1 as position, calls, input_tokens, output_tokens,
           retail_usd, developer_revenue_usd, upstream_cost_usd
      from hourly
    union all
    select k.day, k.app_id, k.feature_key, k.provider, k.model, k.route_mode, i.position, 0, 0, 0, 0, 0, 0
      from (select distinct day, app_id, feature_key, provider, model, route_mode from hourly) k
     cross join generate_series(0, 24) as i(position)
  ), dense as (
    select day, app_id, feature_key, provider, model, route_mode, position, sum(calls) as calls,
           sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens, sum(retail_usd) as retail_usd,
           sum(developer_revenue_usd) as developer_revenue_usd, sum(upstream_cost_usd) as upstream_cost_usd
      from positions
     group by day, app_id, feature_key, provider, model, route_mode, position
  ), running as (
    select day, app_id, feature_key, provider, model, route_mode, position,
           (sum(calls) over w)::bigint as calls, (sum(input_tokens) over w)::bigint as input_tokens,
           (sum(output_tokens) over w)::bigint as output_tokens, sum(retail_usd) over w as retail_usd,
           sum(developer_revenue_usd) over w as developer_revenue_usd, sum(upstream_cost_usd) over w as upstream_cost_usd
      from dense
    window w as (partition by day, app_id, feature_key, provider, model, route_mode order by position)
  ), folded as (
    insert into usage_rollup_daily as r (day, app_id, feature_key, provider, model, route_mode, calls, input_tokens,
                                         output_tokens, retail_usd, developer_revenue_usd, upstream_cost_usd)
    select day, app_id, feature_key, provider, model, route_mode, array_agg(calls order by position),
           array_agg(input_tokens order by position), array_agg(output_tokens order by position),
           array_agg(retail_usd order by position), array_agg(developer_revenue_usd order by position),
           array_agg(upstream_cost_usd order by position)
      from running
     group by day, app_id, feature_key, provider, model, route_mode
    on conflict (app_id, day, feature_key, provider, model, route_mode) do update
      set calls = (select array_agg(a + b order by n) from unnest(r.calls, excluded.calls) with ordinality as t(a, b, n)),
          input_tokens = (select array_agg(a + b order by n) from unnest(r.input_tokens, excluded.input_tokens) with ordinality as t(a, b, n)),
          output_tokens = (select array_agg(a + b order by n) from unnest(r.output_tokens, excluded.output_tokens) with ordinality as t(a, b, n)),
          retail_usd = (select array_agg(a + b order by n) from unnest(r.retail_usd, excluded.retail_usd) with ordinality as t(a, b, n)),
          developer_revenue_usd = (select array_agg(a + b order by n)
                                     from unnest(r.developer_revenue_usd, excluded.developer_revenue_usd) with ordinality as t(a, b, n)),
          upstream_cost_usd = (select array_agg(a + b order by n)
                                 from unnest(r.upstream_cost_usd, excluded.upstream_cost_usd) with ordinality as t(a, b, n))
  )
  -- A data-modifying CTE runs to completion whether or not the final select reads it.
  select (select count(*) from moved), t.apps, t.days into v_count, v_apps, v_days
    from (select array_agg(app_id) as apps, array_agg(day) as days from (select distinct app_id, day from hourly) d) t;

  -- The touched app-days, summed again from the rollup rows (which this statement now sees).
  insert into usage_rollup_app_daily as a (app_id, day, keys, calls, input_tokens, output_tokens, retail_usd,
                                          developer_revenue_usd, upstream_cost_usd)
  select t.app_id, t.day, s.keys, s.calls, s.input_tokens, s.output_tokens, s.retail_usd, s.developer_revenue_usd,
         s.upstream_cost_usd
    from unnest(v_apps, v_days) as t(app_id, day)
   cross join lateral (
     select max(h.keys)::integer as keys, array_agg(h.calls order by h.n) as calls,
            array_agg(h.input_tokens order by h.n) as input_tokens, array_agg(h.output_tokens order by h.n) as output_tokens,
            array_agg(h.retail_usd order by h.n) as retail_usd, array_agg(h.developer_revenue_usd order by h.n) as developer_revenue_usd,
            array_agg(h.upstream_cost_usd order by h.n) as upstream_cost_usd
       from (select i.n, count(*) as keys, sum(r.calls[i.n])::bigint as calls, sum(r.input_tokens[i.n])::bigint as input_tokens,
                    sum(r.output_tokens[i.n])::bigint as output_tokens, sum(r.retail_usd[i.n]) as retail_usd,
                    sum(r.developer_revenue_usd[i.n]) as developer_revenue_usd, sum(r.upstream_cost_usd[i.n]) as upstream_cost_usd
               from usage_rollup_daily r cross join generate_series(1, 25) as i(n)
              where r.app_id = t.app_id and r.day = t.day
              group by i.n) h) s
  on conflict (app_id, day) do update
    set keys = excluded.keys, calls = excluded.calls, input_tokens = excluded.input_tokens,
        output_tokens = excluded.output_tokens, retail_usd = excluded.retail_usd,
        developer_revenue_usd = excluded.developer_revenue_usd, upstream_cost_usd = excluded.upstream_cost_usd;
  return v_count;
end
$$;
