-- The current definition of faucet_held (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Sum of a wallet's active, unexpired holds, leaving out one request's own hold (null: leave out none).
create or replace function faucet_held(p_wallet_id uuid, p_except_request_id text) returns numeric
language sql stable as $$
  select coalesce(sum(amount), 0)::numeric(20, 8) from balance_holds
  where wallet_id = p_wallet_id and status = 'active' and expires_at > now()
    and (p_except_request_id is null or request_id <> p_except_request_id)
$$;
