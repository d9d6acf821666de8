-- The current definition of faucet_system_wallet (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_system_wallet(p_kind text) returns uuid
language plpgsql stable as $$
declare
  v_id uuid;
begin
  select id into v_id from wallets where kind = p_kind and end_user_id is null and developer_id is null;
  if v_id is null then
    raise exception 'system wallet % is missing', p_kind using errcode = 'P0002';
  end if;
  return v_id;
end
$$;
