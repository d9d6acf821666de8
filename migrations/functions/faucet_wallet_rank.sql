-- The current definition of faucet_wallet_rank (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_wallet_rank(p_kind text) returns integer
language sql immutable as $$
  select case p_kind when 'user' then 0 when 'developer' then 1 else 2 end
$$;
