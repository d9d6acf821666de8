-- The day totals of each app (docs/developers.md, "Usage"): one row per UTC day × app of
-- `usage_rollup_daily`, its running sums added element by element, and `keys`, how many rows of that
-- rollup (feature × provider × model × route) the day has. GET /v1/developer/usage takes the totals of
-- a range from here (one row per app and day instead of one per group) and uses `keys` to decide how
-- many days one page needs. faucet_roll_up_usage keeps it equal to the sums of `usage_rollup_daily`
-- in the same transaction; a test checks the equality. Idempotent: `if not exists`, and the backfill
-- skips the app-days already present.

create table if not exists usage_rollup_app_daily (
  app_id uuid not null references apps(id),
  day date not null,
  keys integer not null,
  calls bigint[] not null,
  input_tokens bigint[] not null,
  output_tokens bigint[] not null,
  retail_usd numeric[] not null,
  developer_revenue_usd numeric[] not null,
  upstream_cost_usd numeric[] not null,
  constraint usage_rollup_app_daily_pkey primary key (app_id, day),
  constraint usage_rollup_app_daily_hours check (
    cardinality(calls) = 25 and cardinality(input_tokens) = 25 and cardinality(output_tokens) = 25
    and cardinality(retail_usd) = 25 and cardinality(developer_revenue_usd) = 25 and cardinality(upstream_cost_usd) = 25)
);

-- Backfill from the rollup (the fold keeps the two equal from now on: it runs one at a time and this
-- migration's transaction holds the same advisory lock).
select pg_advisory_xact_lock(hashtext('faucet_roll_up_usage'));
insert into usage_rollup_app_daily (app_id, day, keys, calls, input_tokens, output_tokens, retail_usd, developer_revenue_usd,
                                    upstream_cost_usd)
select s.app_id, s.day, max(s.keys)::integer, array_agg(s.calls order by s.n), array_agg(s.input_tokens order by s.n),
       array_agg(s.output_tokens order by s.n), array_agg(s.retail_usd order by s.n),
       array_agg(s.developer_revenue_usd order by s.n), array_agg(s.upstream_cost_usd order by s.n)
  from (select r.app_id, r.day, i.n, count(*) as keys, sum(r.calls[i.n])::bigint as calls,
               sum(r.input_tokens[i.n])::bigint as input_tokens, sum(r.output_tokens[i.n])::bigint as output_tokens,
               sum(r.retail_usd[i.n]) as retail_usd, sum(r.developer_revenue_usd[i.n]) as developer_revenue_usd,
               sum(r.upstream_cost_usd[i.n]) as upstream_cost_usd
          from usage_rollup_daily r cross join generate_series(1, 25) as i(n)
         group by r.app_id, r.day, i.n) s
 group by s.app_id, s.day
on conflict (app_id, day) do nothing;
