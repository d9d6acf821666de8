-- The current definition of faucet_roll_up_locked (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Fold a wallet's pending credits into its balance row. The caller holds the wallet's row lock.
-- Credits appended by bookings still in flight stay pending for the next roll-up.
create or replace function faucet_roll_up_locked(p_wallet_id uuid) returns numeric
language plpgsql as $$
declare
  v_total numeric;
begin
  with moved as (delete from wallet_balance_deltas where wallet_id = p_wallet_id returning amount)
  select coalesce(sum(amount), 0) into v_total from moved;
  if v_total <> 0 then
    update wallets set balance = balance + v_total where id = p_wallet_id;
  end if;
  return v_total;
end
$$;
