-- The current definition of faucet_lease_set_hold (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's lease, set: a hold on the end user's wallet keyed by p_lease_key, from the balance
-- its flush's bookings left and every other active unexpired hold, under the room the spend limits
-- leave (p_room, faucet_lease_spend_room; null: no limit):
--   p_keep:     greatest(old − retail booked now (p_booked), least(p_target, balance − other holds, room), 0):
--               the object's reservations made while the flush was in flight stay covered; old (p_old) =
--               the lease's amount if it was active and unexpired, else 0;
--   not p_keep: greatest(0, least(p_target, balance − other holds)) (a recall);
-- with the call slots p_slots (faucet_lease_call_slots; null: no requests-per-minute limit); expires
-- now() + p_ttl_seconds; 'active', or 'released' when not p_keep and the amount is 0 (p_target 0,
-- p_keep false: the release). The hold row (p_hold_id; null: none yet) is created on first use and
-- reactivated when it had expired or been released. faucet_settle_lease calls it with the wallet
-- and the hold row locked.
-- Answers the lease's amount, expiry and status, the wallet's balance and what is available (balance
-- − every active unexpired hold, the lease included), amounts of 8 decimals.
create or replace function faucet_lease_set_hold(
  p_wallet_id uuid,
  p_lease_key text,
  p_hold_id uuid,
  p_old numeric,
  p_booked numeric,
  p_room numeric,
  p_slots integer,
  p_target numeric,
  p_keep boolean,
  p_ttl_seconds integer,
  out amount_usd numeric,
  out expires_at timestamptz,
  out status text,
  out wallet_balance_usd numeric,
  out available_usd numeric
)
language plpgsql as $$
declare
  v_balance numeric;
  v_others numeric;
  v_new numeric;
  v_status text;
  v_lease balance_holds%rowtype;
begin
  select w.balance into v_balance from wallets w where w.id = p_wallet_id;
  v_others := faucet_held(p_wallet_id, p_lease_key);
  -- least ignores a room not set.
  if p_keep then
    v_new := greatest(p_old - p_booked, least(p_target, v_balance - v_others, p_room), 0);
  else
    v_new := greatest(0, least(p_target, v_balance - v_others));
  end if;
  v_status := case when not p_keep and v_new = 0 then 'released' else 'active' end;
  if p_hold_id is null then
    insert into balance_holds (wallet_id, request_id, amount, status, expires_at, closed_at, call_slots)
    values (p_wallet_id, p_lease_key, v_new, v_status, now() + make_interval(secs => p_ttl_seconds),
            case when v_status = 'released' then now() end, p_slots)
    returning * into v_lease;
  else
    update balance_holds h
       set amount = v_new, status = v_status, expires_at = now() + make_interval(secs => p_ttl_seconds),
           closed_at = case when v_status = 'released' then now() end, call_slots = p_slots
     where h.id = p_hold_id
    returning * into v_lease;
  end if;
  amount_usd := v_lease.amount::numeric(20, 8);
  expires_at := v_lease.expires_at;
  status := v_lease.status;
  wallet_balance_usd := v_balance::numeric(20, 8);
  -- The lease counts when active (its expiry is now() + a positive lifetime).
  available_usd := (v_balance - v_others - case when v_lease.status = 'active' and v_lease.expires_at > now() then v_lease.amount else 0 end)
                     ::numeric(20, 8);
end
$$;
