-- Developer usage from a rollup (docs/developers.md, "Usage"). `usage_rollup_daily` holds one row per
-- UTC day × app × feature × provider × model × route whose measures are running sums over the day's
-- hours: element k + 1 of each array sums the hours before k (element 1 is 0, element 25 the whole day),
-- so any run of whole hours of the day is one subtraction. `usage_rollup_pending` lists the events not
-- folded in yet: a trigger on `usage_events` appends every new event (an append, no shared row, so
-- bookings never wait on one another) and faucet_roll_up_usage (API cron) folds the list into the
-- rollup. GET /v1/developer/usage reads the rollup plus the pending events, so it is exact at any moment.
-- Idempotent: `if not exists`, and the backfill runs only while both tables are empty.

create table if not exists usage_rollup_daily (
  day date not null,
  app_id uuid not null references apps(id),
  feature_key text not null,
  provider text not null,
  model text not null,
  route_mode text not null,
  calls bigint[] not null,
  input_tokens bigint[] not null,
  output_tokens bigint[] not null,
  retail_usd numeric[] not null,
  developer_revenue_usd numeric[] not null,
  upstream_cost_usd numeric[] not null,
  constraint usage_rollup_daily_pkey primary key (app_id, day, feature_key, provider, model, route_mode),
  constraint usage_rollup_daily_hours check (
    cardinality(calls) = 25 and cardinality(input_tokens) = 25 and cardinality(output_tokens) = 25
    and cardinality(retail_usd) = 25 and cardinality(developer_revenue_usd) = 25 and cardinality(upstream_cost_usd) = 25)
);

create table if not exists usage_rollup_pending (
  usage_event_id uuid primary key references usage_events(id),
  app_id uuid not null,
  created_at timestamptz not null
);
create index if not exists usage_rollup_pending_app_created on usage_rollup_pending (app_id, created_at);

-- The exact path reads the raw events of an hour a local day boundary cuts (zones with sub-hour offsets).
create index if not exists usage_events_app_created on usage_events (app_id, created_at);

-- A first definition of the trigger function, so the trigger exists in this transaction, before the
-- backfill: `create trigger` locks usage_events against inserts until commit, so no event is both
-- missed by the backfill and not queued. Its current definition: functions/faucet_queue_usage_rollup.sql.
create or replace function faucet_queue_usage_rollup() returns trigger
language plpgsql as $$
begin
  insert into usage_rollup_pending (usage_event_id, app_id, created_at)
  select id, app_id, created_at from inserted_usage_events;
  return null;
end
$$;
create or replace trigger usage_events_queue_rollup
  after insert on usage_events
  referencing new table as inserted_usage_events
  for each statement execute function faucet_queue_usage_rollup();

-- Backfill: the events written before this migration wait in the list like new ones; the first
-- faucet_roll_up_usage folds them (reads are exact meanwhile).
insert into usage_rollup_pending (usage_event_id, app_id, created_at)
select e.id, e.app_id, e.created_at from usage_events e
 where not exists (select 1 from usage_rollup_daily) and not exists (select 1 from usage_rollup_pending);
