-- Race-safe caps on live rows (issue 15; docs/developers.md): live apps per developer, live features
-- per app, live keys per developer. The creations used to check their cap inside the insert, and under
-- READ COMMITTED two concurrent inserts each counted without the other, so a developer racing creations
-- at the cap ended above it. A row trigger now locks the parent row and counts in a statement of its
-- own (faucet_cap_live_rows); the same holds for an update that makes a row live again (an unarchive or
-- unrevoke) or moves it to another parent. Idempotent: `create or replace`.

-- A first definition of the trigger function, so the triggers can be created here (the function
-- files are applied after the numbered migrations). Its current definition:
-- functions/faucet_cap_live_rows.sql.
create or replace function faucet_cap_live_rows() returns trigger
language plpgsql as $$
declare
  max_live_apps constant integer := 100;        -- per developer
  max_live_features constant integer := 100;    -- per app
  max_live_keys constant integer := 20;         -- per developer
  live integer;
begin
  case tg_table_name
  when 'apps' then
    perform 1 from developers where id = new.developer_id for no key update;
    select count(*) into live from apps where developer_id = new.developer_id and archived_at is null;
    if live >= max_live_apps then
      raise exception using errcode = 'FC409', message = format('You already have %s live apps: archive one first', max_live_apps);
    end if;
  when 'app_features' then
    perform 1 from apps where id = new.app_id for no key update;
    select count(*) into live from app_features where app_id = new.app_id and archived_at is null;
    if live >= max_live_features then
      raise exception using errcode = 'FC409',
        message = format('This app already has %s live features: archive one first', max_live_features);
    end if;
  when 'developer_keys' then
    perform 1 from developers where id = new.developer_id for no key update;
    select count(*) into live from developer_keys where developer_id = new.developer_id and revoked_at is null;
    if live >= max_live_keys then
      raise exception using errcode = 'FC409', message = format('At most %s live keys: revoke one first', max_live_keys);
    end if;
  end case;
  return new;
end
$$;

create or replace trigger apps_cap_live
  before insert on apps
  for each row when (new.archived_at is null) execute function faucet_cap_live_rows();
create or replace trigger apps_cap_live_again
  before update of archived_at, developer_id on apps
  for each row when (new.archived_at is null and (old.archived_at is not null or old.developer_id <> new.developer_id))
  execute function faucet_cap_live_rows();

create or replace trigger app_features_cap_live
  before insert on app_features
  for each row when (new.archived_at is null) execute function faucet_cap_live_rows();
create or replace trigger app_features_cap_live_again
  before update of archived_at, app_id on app_features
  for each row when (new.archived_at is null and (old.archived_at is not null or old.app_id <> new.app_id))
  execute function faucet_cap_live_rows();

create or replace trigger developer_keys_cap_live
  before insert on developer_keys
  for each row when (new.revoked_at is null) execute function faucet_cap_live_rows();
create or replace trigger developer_keys_cap_live_again
  before update of revoked_at, developer_id on developer_keys
  for each row when (new.revoked_at is null and (old.revoked_at is not null or old.developer_id <> new.developer_id))
  execute function faucet_cap_live_rows();
