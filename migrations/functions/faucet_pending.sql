-- The current definition of faucet_pending (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Credits appended to a hot account and not yet folded into its balance row.
create or replace function faucet_pending(p_wallet_id uuid) returns numeric
language sql stable as $$
  select coalesce(sum(amount), 0)::numeric(20, 8) from wallet_balance_deltas where wallet_id = p_wallet_id
$$;
