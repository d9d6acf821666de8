-- Signed events out (docs/webhooks.md). webhook_events is an outbox: the triggers of
-- functions/faucet_webhook_triggers.sql write an event in the transaction of the change it reports
-- (a balance crossing the app's threshold, a spend limit reached, a developer key's budget at 80 % and
-- 100 %, a payout's state, a clawback), so none is lost and none is invented. The relay
-- (workers/shared/webhooks/relay.ts) turns each event into one delivery per subscribed endpoint and
-- queues it; the webhooks queue's consumer signs and sends it, retrying with a growing delay.

-- The low-balance threshold of an app's end users (null: no event).
alter table apps add column if not exists low_balance_threshold_usd numeric(20, 8);
do $$ begin
  alter table apps add constraint apps_low_balance_threshold check (low_balance_threshold_usd is null or low_balance_threshold_usd > 0);
exception when duplicate_object then null; end $$;

create table if not exists webhook_endpoints (
  id uuid primary key default gen_random_uuid(),
  developer_id uuid not null references developers(id),
  url text not null,
  description text,
  -- The event types delivered here ('*': all).
  event_types text[] not null,
  enabled boolean not null default true,
  -- The signing secret, sealed as provider keys are (the endpoint's id as additional data); its last
  -- four characters for display. During a rotation the previous one signs too, until it expires.
  secret_ciphertext text not null,
  secret_iv text not null,
  secret_key_version integer not null,
  secret_hint text not null,
  previous_secret_ciphertext text,
  previous_secret_iv text,
  previous_secret_key_version integer,
  previous_secret_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  constraint webhook_endpoints_event_types check (cardinality(event_types) > 0),
  constraint webhook_endpoints_previous_secret check (
    (previous_secret_ciphertext is null) = (previous_secret_iv is null)
    and (previous_secret_ciphertext is null) = (previous_secret_key_version is null)
    and (previous_secret_ciphertext is null) = (previous_secret_expires_at is null))
);
create index if not exists webhook_endpoints_developer on webhook_endpoints (developer_id, created_at) where deleted_at is null;

create table if not exists webhook_events (
  id uuid primary key default gen_random_uuid(),
  developer_id uuid not null references developers(id),
  type text not null,
  -- Internal ids (end_user_id, app_id, …): the delivery renders them as the public ones (user_ref, public_app_id).
  data jsonb not null,
  -- One event per fact that may be seen twice (a limit reached once per period, a payout state once).
  dedupe_key text unique,
  created_at timestamptz not null default now(),
  relayed_at timestamptz
);
create index if not exists webhook_events_unrelayed on webhook_events (created_at) where relayed_at is null;
create index if not exists webhook_events_developer_created on webhook_events (developer_id, created_at);

create table if not exists webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  event_id uuid not null references webhook_events(id),
  endpoint_id uuid not null references webhook_endpoints(id),
  developer_id uuid not null references developers(id),
  -- pending (queued or waiting for a retry), delivered, failed (out of attempts or refused).
  status text not null default 'pending',
  attempts integer not null default 0,
  -- When the queue should have it next: a pending delivery long past it is queued again by the cron.
  next_attempt_at timestamptz not null default now(),
  last_attempt_at timestamptz,
  last_status integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  constraint webhook_deliveries_status check (status in ('pending', 'delivered', 'failed')),
  constraint webhook_deliveries_attempts check (attempts >= 0),
  constraint webhook_deliveries_once unique (event_id, endpoint_id)
);
create index if not exists webhook_deliveries_endpoint_created on webhook_deliveries (endpoint_id, created_at desc, id desc);
create index if not exists webhook_deliveries_pending on webhook_deliveries (next_attempt_at) where status = 'pending';
create index if not exists webhook_deliveries_created on webhook_deliveries (created_at);

create table if not exists webhook_delivery_attempts (
  id uuid primary key default gen_random_uuid(),
  delivery_id uuid not null references webhook_deliveries(id),
  attempted_at timestamptz not null default now(),
  -- The endpoint's HTTP status (null: no answer), or why it was not sent or not accepted.
  status_code integer,
  error text,
  duration_ms integer not null,
  constraint webhook_delivery_attempts_duration check (duration_ms >= 0)
);
create index if not exists webhook_delivery_attempts_delivery on webhook_delivery_attempts (delivery_id, attempted_at);

-- First definitions, so the triggers can be created here; the current ones are in
-- functions/faucet_webhook_triggers.sql (applied after the numbered migrations).
create or replace function faucet_webhook_balance_low() returns trigger language plpgsql as $$ begin return null; end $$;
create or replace function faucet_webhook_usage_limits() returns trigger language plpgsql as $$ begin return null; end $$;
create or replace function faucet_webhook_payout_state() returns trigger language plpgsql as $$ begin return null; end $$;
create or replace function faucet_webhook_clawback() returns trigger language plpgsql as $$ begin return null; end $$;

create or replace trigger wallets_webhook_balance_low
  after update of balance on wallets
  for each row when (new.kind = 'user' and new.balance < old.balance)
  execute function faucet_webhook_balance_low();
create or replace trigger usage_events_webhook_limits
  after insert on usage_events
  referencing new table as inserted_usage_events
  for each statement execute function faucet_webhook_usage_limits();
create or replace trigger payouts_webhook_state
  after insert or update of status on payouts
  for each row execute function faucet_webhook_payout_state();
create or replace trigger revenue_clawbacks_webhook
  after insert or update of status on revenue_clawbacks
  for each row execute function faucet_webhook_clawback();
create or replace function faucet_webhook_spend_refusals() returns trigger language plpgsql as $$ begin return null; end $$;
create or replace trigger gateway_call_log_webhook_spend_refusals
  after insert on gateway_call_log
  referencing new table as inserted_call_log
  for each statement execute function faucet_webhook_spend_refusals();
