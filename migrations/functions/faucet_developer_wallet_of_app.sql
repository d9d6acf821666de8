-- The current definition of faucet_developer_wallet_of_app (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_developer_wallet_of_app(p_app_id uuid) returns uuid
language plpgsql as $$
declare
  v_developer_id uuid;
  v_id uuid;
begin
  select developer_id into v_developer_id from apps where id = p_app_id;
  if v_developer_id is null then
    raise exception 'app % does not exist', p_app_id using errcode = 'P0002';
  end if;
  insert into wallets (kind, developer_id) values ('developer', v_developer_id) on conflict (developer_id) do nothing;
  select id into v_id from wallets where developer_id = v_developer_id;
  return v_id;
end
$$;
