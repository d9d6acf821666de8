-- End-user identity (docs/identity.md): a session only for a user the app vouches for.
-- Per app: the session policy (`server` by default, also for apps that existed before), the
-- developer's JWKS URL or signing secrets for `signed`, the web origins allowed to call; per
-- session: its revocation. Idempotent: `if not exists` and duplicate constraints ignored.

alter table apps add column if not exists session_policy text not null default 'server';
do $$ begin
  alter table apps add constraint apps_session_policy check (session_policy in ('server', 'signed', 'anonymous'));
exception when duplicate_object then null;
end $$;
alter table apps add column if not exists jwks_url text;
alter table apps add column if not exists allowed_origins jsonb not null default '[]';
-- Preflights ask whether any app lists an origin.
create index if not exists apps_allowed_origins on apps using gin (allowed_origins);

-- HS256 secrets of `signed` apps, sealed with PROVIDER_KEY_ENCRYPTION_KEY (HMAC needs the secret
-- itself). `retires_at` null = the current secret; set = a previous one, verifying until then.
create table if not exists app_signing_secrets (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references apps(id),
  ciphertext text not null,
  iv text not null,
  key_version integer not null,
  created_at timestamptz not null default now(),
  retires_at timestamptz
);
create index if not exists app_signing_secrets_app on app_signing_secrets (app_id);

alter table virtual_sessions add column if not exists revoked_at timestamptz;
create index if not exists virtual_sessions_end_user on virtual_sessions (end_user_id);
