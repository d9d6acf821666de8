-- The current definition of faucet_wallet_balance (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet's balance: the row's cached balance plus its pending credits.
create or replace function faucet_wallet_balance(p_wallet_id uuid) returns numeric
language sql stable as $$
  select (w.balance + faucet_pending(w.id))::numeric(20, 8) from wallets w where w.id = p_wallet_id
$$;
