-- The current definition of faucet_roll_up_balances (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Housekeeping: fold the pending credits of every wallet, locking in the global order.
create or replace function faucet_roll_up_balances() returns integer
language plpgsql as $$
declare
  r record;
  v_count integer := 0;
begin
  for r in
    select w.id from wallets w
    where exists (select 1 from wallet_balance_deltas d where d.wallet_id = w.id)
    order by faucet_wallet_rank(w.kind), w.id
  loop
    perform 1 from wallets where id = r.id for no key update;
    perform faucet_roll_up_locked(r.id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
