-- The current definition of faucet_developer_price (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The developer's own price for a call: per-million price × tokens, rounded up to 1e-8 USD. The
-- money module's `priceTokensExact` + round-up gives the same amounts (pinned by test vectors).
create or replace function faucet_developer_price(p_price_per_mtok numeric, p_tokens bigint) returns numeric
language sql immutable as $$
  select (ceil(p_price_per_mtok * p_tokens / 1000000 * 100000000) / 100000000)::numeric(20, 8)
$$;
