-- The current definition of faucet_user_wallet (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_user_wallet(p_end_user_id uuid) returns uuid
language plpgsql as $$
declare
  v_id uuid;
begin
  insert into wallets (kind, end_user_id) values ('user', p_end_user_id) on conflict (end_user_id) do nothing;
  select id into v_id from wallets where end_user_id = p_end_user_id;
  return v_id;
end
$$;
