-- The current definition of faucet_reserve_hold (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Reserve an amount against the end user's available balance (balance − active unexpired holds).
-- outcome: 'reserved' | 'duplicate' (a hold for this request exists: returns it) | 'insufficient_balance'.
create or replace function faucet_reserve_hold(p_end_user_id uuid, p_request_id text, p_amount numeric, p_ttl_seconds integer)
returns table (outcome text, hold_id uuid, wallet_id uuid, amount numeric, expires_at timestamptz, available_usd numeric)
language plpgsql as $$
#variable_conflict use_column
declare
  v_wallet_id uuid;
  v_balance numeric;
  v_available numeric;
  v_hold balance_holds%rowtype;
begin
  if p_amount < 0 or p_ttl_seconds <= 0 then
    raise exception 'hold amount must not be negative and its lifetime positive' using errcode = '22023';
  end if;
  select id, balance into v_wallet_id, v_balance from wallets where end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    select balance into v_balance from wallets where id = v_wallet_id for no key update;
  end if;

  select * into v_hold from balance_holds h where h.request_id = p_request_id;
  if found then
    return query select 'duplicate'::text, v_hold.id, v_hold.wallet_id, v_hold.amount, v_hold.expires_at,
      (v_balance - faucet_held(v_wallet_id, null))::numeric(20, 8);
    return;
  end if;

  v_available := v_balance - faucet_held(v_wallet_id, null);
  if v_available < p_amount then
    return query select 'insufficient_balance'::text, null::uuid, v_wallet_id, p_amount::numeric(20, 8), null::timestamptz,
      v_available::numeric(20, 8);
    return;
  end if;

  insert into balance_holds (wallet_id, request_id, amount, expires_at)
  values (v_wallet_id, p_request_id, p_amount, now() + make_interval(secs => p_ttl_seconds))
  returning * into v_hold;
  return query select 'reserved'::text, v_hold.id, v_wallet_id, v_hold.amount, v_hold.expires_at,
    (v_available - p_amount)::numeric(20, 8);
end
$$;
