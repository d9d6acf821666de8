-- Faucet initial schema. Idempotent: every statement is a no-op when its object exists.
create extension if not exists pgcrypto;

create table if not exists developers (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  email text not null unique,
  api_key_hash text not null unique,
  api_key_prefix text not null,
  created_at timestamptz not null default now()
);

create table if not exists apps (
  id uuid primary key default gen_random_uuid(),
  developer_id uuid not null references developers(id),
  public_app_id text not null unique,
  name text not null,
  developer_share_bps integer not null default 5000,
  created_at timestamptz not null default now()
);

create table if not exists app_features (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references apps(id),
  feature_key text not null,
  name text not null,
  default_model text not null,
  route_policy text not null default 'platform_first',
  developer_price_per_mtok_usd numeric(20, 8),
  open_fee_usd numeric(20, 8) not null default 0,
  created_at timestamptz not null default now()
);
create unique index if not exists app_features_app_feature_key on app_features (app_id, feature_key);

create table if not exists end_users (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references apps(id),
  external_user_hash text not null,
  created_at timestamptz not null default now()
);
create unique index if not exists end_users_app_external on end_users (app_id, external_user_hash);

create table if not exists wallets (
  id uuid primary key default gen_random_uuid(),
  kind text not null,
  end_user_id uuid unique references end_users(id),
  developer_id uuid unique references developers(id),
  currency char(3) not null default 'USD',
  balance numeric(20, 8) not null default 0,
  allow_negative boolean not null default false,
  created_at timestamptz not null default now(),
  constraint wallets_non_negative check (allow_negative or balance >= 0)
);
create unique index if not exists wallets_system_kind on wallets (kind) where end_user_id is null and developer_id is null;

create table if not exists ledger_transactions (
  id uuid primary key default gen_random_uuid(),
  kind text not null,
  idempotency_key text unique,
  request_id text,
  reason text,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now()
);

create table if not exists ledger_entries (
  id bigserial primary key,
  transaction_id uuid not null references ledger_transactions(id),
  wallet_id uuid not null references wallets(id),
  amount numeric(20, 8) not null,
  created_at timestamptz not null default now()
);
create index if not exists ledger_entries_wallet on ledger_entries (wallet_id);
create index if not exists ledger_entries_transaction on ledger_entries (transaction_id);

create table if not exists balance_holds (
  id uuid primary key default gen_random_uuid(),
  wallet_id uuid not null references wallets(id),
  request_id text not null unique,
  amount numeric(20, 8) not null,
  status text not null default 'active',
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  closed_at timestamptz
);
create index if not exists balance_holds_wallet_active on balance_holds (wallet_id) where status = 'active';

create table if not exists virtual_sessions (
  id uuid primary key default gen_random_uuid(),
  token_hash text not null unique,
  app_id uuid not null references apps(id),
  end_user_id uuid not null references end_users(id),
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index if not exists virtual_sessions_expires on virtual_sessions (expires_at);

create table if not exists provider_credentials (
  id uuid primary key default gen_random_uuid(),
  owner_type text not null,
  end_user_id uuid references end_users(id),
  developer_id uuid references developers(id),
  provider text not null,
  label text,
  ciphertext text not null,
  iv text not null,
  key_version integer not null,
  masked_key text not null,
  status text not null default 'active',
  monthly_budget_usd numeric(20, 8),
  created_at timestamptz not null default now(),
  disabled_at timestamptz
);
create index if not exists provider_credentials_end_user on provider_credentials (end_user_id, provider);
create index if not exists provider_credentials_developer on provider_credentials (developer_id, provider);

create table if not exists usage_events (
  id uuid primary key default gen_random_uuid(),
  request_id text not null unique,
  app_id uuid not null references apps(id),
  end_user_id uuid references end_users(id),
  feature_key text not null,
  route_mode text not null,
  provider text not null,
  model text not null,
  input_tokens integer not null,
  output_tokens integer not null,
  cached_tokens integer not null default 0,
  estimated boolean not null default false,
  upstream_cost_usd numeric(20, 8) not null,
  retail_usd numeric(20, 8) not null,
  developer_revenue_usd numeric(20, 8) not null,
  platform_share_usd numeric(20, 8) not null,
  provider_credential_id uuid references provider_credentials(id),
  ledger_transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now()
);
create index if not exists usage_events_end_user_created on usage_events (end_user_id, created_at);
create index if not exists usage_events_created on usage_events (created_at);
create index if not exists usage_events_credential_created on usage_events (provider_credential_id, created_at);

create table if not exists payouts (
  id uuid primary key default gen_random_uuid(),
  developer_id uuid not null references developers(id),
  wallet_id uuid not null references wallets(id),
  amount numeric(20, 8) not null,
  status text not null default 'pending',
  operator_note text,
  ledger_transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now(),
  approved_at timestamptz,
  paid_at timestamptz
);
create unique index if not exists payouts_one_open_per_wallet on payouts (wallet_id) where status in ('pending', 'processing');

create table if not exists audit_logs (
  id bigserial primary key,
  actor_type text not null,
  actor_id text,
  action text not null,
  target_type text not null,
  target_id text not null,
  request_id text,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index if not exists audit_logs_target on audit_logs (target_type, target_id);

create table if not exists checkout_sessions (
  id uuid primary key default gen_random_uuid(),
  stripe_session_id text not null unique,
  wallet_id uuid not null references wallets(id),
  amount_cents integer not null,
  status text not null default 'pending',
  ledger_transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now(),
  completed_at timestamptz
);

create table if not exists processed_webhook_events (
  event_id text primary key,
  type text not null,
  received_at timestamptz not null default now()
);
