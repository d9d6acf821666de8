-- Developers managed through the API (docs/developers.md): several live `fdk_` keys per developer
-- (rotation without downtime), each revocable and stamped when last used; a developer can be
-- suspended (their apps refuse new sessions and calls) and names a payout details reference.
-- The single key hash that `developers` held moves into `developer_keys`, then its columns go.
-- Idempotent: `if not exists`, and the carry-over runs only while the old columns exist.

create table if not exists developer_keys (
  id uuid primary key default gen_random_uuid(),
  developer_id uuid not null references developers(id),
  key_hash text not null unique,
  prefix text not null,
  label text,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index if not exists developer_keys_developer on developer_keys (developer_id, created_at);

alter table developers add column if not exists payout_details_ref text;
alter table developers add column if not exists suspended_at timestamptz;

do $$ begin
  if exists (select 1 from information_schema.columns
              where table_schema = current_schema() and table_name = 'developers' and column_name = 'api_key_hash') then
    insert into developer_keys (developer_id, key_hash, prefix, label, created_at)
    select id, api_key_hash, api_key_prefix, 'initial key', created_at from developers
    on conflict (key_hash) do nothing;
    alter table developers drop column api_key_hash;
    alter table developers drop column api_key_prefix;
  end if;
end $$;

-- A developer's audit log: rows they acted in, and rows about them (admin suspensions).
create index if not exists audit_logs_actor on audit_logs (actor_type, actor_id);
