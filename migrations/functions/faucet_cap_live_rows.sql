-- The current definition of faucet_cap_live_rows (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Trigger of apps, app_features and developer_keys (row level, before insert and before an update that
-- makes a row live again or moves it to another parent; migration 0021): the caps on live rows, race-safe.
-- A row becomes live only after its parent row is locked (the developer for apps and keys, the app for
-- features; `for no key update`, so inserts that merely reference the parent never wait), and the count
-- that follows is a new statement, so it sees every row a concurrent creator committed while this one
-- waited. Two creations for one parent therefore run one after the other, and the second counts the
-- first. A full cap raises SQLSTATE FC409, which the API answers as 409 `conflict` with this message
-- (workers/shared/ledger/database.ts); the whole statement, its audit row included, is rolled back.
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
