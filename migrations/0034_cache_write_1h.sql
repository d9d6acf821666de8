-- One-hour prompt-cache writes, priced apart (docs/models.md, "Prices"; docs/surfaces.md, "Prompt
-- caching"): Anthropic bills a write with `ttl: '1h'` at its own price (2× the input price, where the
-- five-minute write is 1.25×). A usage record keeps them as a token part of their own, apart from
-- cache_write_tokens (the five-minute writes), with the per-million price they were rated at, so an
-- old call still re-rates to the cent from its row alone:
--   upstream cost = Σ class tokens × class price / 1e6 (+ cache_write_1h_tokens × its price), rounded up once.
-- Rows before this migration wrote no one-hour cache: 0 tokens, no price (nothing is backfilled).
-- Idempotent: `if not exists`, a constraint dropped before it is added again, duplicates ignored.

alter table usage_events add column if not exists cache_write_1h_tokens integer not null default 0;
alter table usage_events add column if not exists cache_write_1h_price_per_mtok_usd numeric(20, 8);

-- The token parts, the one-hour writes among them (the definition of migration 0013 plus that part).
alter table usage_events drop constraint if exists usage_events_token_parts;
alter table usage_events add constraint usage_events_token_parts check (
  least(cache_write_tokens, cache_write_1h_tokens, audio_input_tokens, audio_output_tokens, reasoning_tokens) >= 0
  and cached_tokens + cache_write_tokens + cache_write_1h_tokens + audio_input_tokens <= input_tokens
  and audio_output_tokens + reasoning_tokens <= output_tokens);

-- Its price is recorded only with the catalog's other prices, and always when a priced call wrote
-- one-hour cache (the 7 prices of usage_events_prices_recorded are unchanged).
do $$ begin
  alter table usage_events add constraint usage_events_cache_write_1h_priced check (
    (cache_write_1h_price_per_mtok_usd is null or input_price_per_mtok_usd is not null)
    and (cache_write_1h_tokens = 0 or input_price_per_mtok_usd is null or cache_write_1h_price_per_mtok_usd is not null));
exception when duplicate_object then null;
end $$;

-- A booking (faucet_usage_booking, migration 0019) carries both; a booking without them (a wallet
-- object's settlement kept from before) books 0 one-hour tokens and no price.
do $$ begin
  alter type faucet_usage_booking add attribute cache_write_1h_tokens integer;
exception when duplicate_column then null;
end $$;
do $$ begin
  alter type faucet_usage_booking add attribute cache_write_1h_price numeric;
exception when duplicate_column then null;
end $$;

-- faucet_book_usage takes them too (a new signature).
drop function if exists faucet_book_usage(text, text, uuid, uuid, uuid, text, text, text, text, integer, integer, integer, boolean,
  numeric, numeric, numeric, numeric, numeric, uuid, jsonb, boolean, text, integer, integer, integer, integer, numeric, numeric,
  numeric, numeric, numeric, numeric, numeric);

-- faucet_book_usage: migrations/functions/faucet_book_usage.sql
