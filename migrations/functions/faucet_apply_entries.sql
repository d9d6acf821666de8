-- The current definition of faucet_apply_entries (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Appends the entries of one transaction and moves the cached balances, locking in (rank, id) order.
-- Zero amounts are left out. The caller has checked the transaction sums to zero.
create or replace function faucet_apply_entries(p_transaction_id uuid, p_wallet_ids uuid[], p_amounts numeric[])
returns void
language plpgsql as $$
declare
  r record;
begin
  insert into ledger_entries (transaction_id, wallet_id, amount)
  select p_transaction_id, t.wallet_id, t.amount
  from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
  where t.amount <> 0;

  for r in
    select t.wallet_id, sum(t.amount) as delta
    from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
    join wallets w on w.id = t.wallet_id
    group by t.wallet_id, w.kind
    having sum(t.amount) <> 0
    order by faucet_wallet_rank(w.kind), t.wallet_id
  loop
    update wallets set balance = balance + r.delta where id = r.wallet_id;
  end loop;
end
$$;
