-- Traces out (docs/traces.md): per app, the OTLP/HTTP endpoint the gateway's spans go to, its headers
-- sealed like provider keys (AES-256-GCM under PROVIDER_KEY_ENCRYPTION_KEY, the app's id as additional
-- data) and only their names and a mask kept readable, and how the last deliveries went.
create table if not exists app_trace_exports (
  app_id uuid primary key references apps(id),
  endpoint text not null,
  -- The headers as one sealed JSON object (null: none), and for display each header's name and mask.
  headers_ciphertext text,
  headers_iv text,
  headers_key_version integer,
  headers_masked jsonb not null default '{}'::jsonb,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  last_success_at timestamptz,
  last_error_at timestamptz,
  last_error text,
  consecutive_failures integer not null default 0,
  constraint app_trace_exports_sealed check (
    (headers_ciphertext is null) = (headers_iv is null) and (headers_ciphertext is null) = (headers_key_version is null)),
  constraint app_trace_exports_failures check (consecutive_failures >= 0)
);
