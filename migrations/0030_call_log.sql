-- The request log (docs/request-log.md): one row per call a wallet object decided — answered, cut,
-- failed upstream or refused — written by the object's flush statement beside the bookings (no write
-- on the call's path). Tokens and money are not copied: they are the call's usage record
-- (usage_events.call_id). No prompt or completion is ever kept here.
create table if not exists gateway_call_log (
  id uuid primary key,
  app_id uuid not null references apps(id),
  end_user_id uuid not null references end_users(id),
  feature_key text not null,
  -- The API the client spoke: chat.completions, responses, messages, embeddings.
  surface text not null,
  -- The model the client named, and the one that answered (or was last tried).
  requested_model text not null,
  provider text,
  model text,
  route_mode text,
  -- answered, cut (the client left or the deadline came: billed what the provider generated), upstream_error, refused.
  outcome text not null,
  error_code text,
  error_message text,
  client_request_id text not null,
  stream boolean not null default false,
  authorize_ms integer,
  first_byte_ms integer,
  total_ms integer,
  -- The attempts (fallback), each {provider, model, outcome, status?, code?}.
  attempts jsonb,
  -- The key the call used on the byok and developer_key routes (shown masked).
  provider_credential_id uuid references provider_credentials(id) on delete set null,
  created_at timestamptz not null,
  constraint gateway_call_log_outcome check (outcome in ('answered', 'cut', 'upstream_error', 'refused')),
  constraint gateway_call_log_surface check (surface in ('chat.completions', 'responses', 'messages', 'embeddings')),
  constraint gateway_call_log_timings check (
    coalesce(authorize_ms, 0) >= 0 and coalesce(first_byte_ms, 0) >= 0 and coalesce(total_ms, 0) >= 0)
);

-- A developer's page is an app's calls newest first (the cursor is created_at, id); an end user's and
-- a request id's calls are probes of their own.
create index if not exists gateway_call_log_app_created on gateway_call_log (app_id, created_at desc, id desc);
create index if not exists gateway_call_log_end_user_created on gateway_call_log (end_user_id, created_at desc, id desc);
create index if not exists gateway_call_log_client_request on gateway_call_log (app_id, client_request_id);
-- The retention cron deletes by age.
create index if not exists gateway_call_log_created on gateway_call_log (created_at);

-- How long an app's call details are kept (the cron deletes older ones); usage records and the
-- ledger are money and are never deleted.
alter table apps add column if not exists call_log_retention_days integer not null default 30;
do $$ begin
  alter table apps add constraint apps_call_log_retention_days check (call_log_retention_days between 1 and 400);
exception when duplicate_object then null; end $$;
