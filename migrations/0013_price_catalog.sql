-- Every usage record keeps what it was rated with (docs/models.md, "Prices"): the price catalog
-- version, the count of each token class priced apart, and the per-million price of each class after
-- the catalog's period and tier were chosen. Re-rating an old call to the cent then needs no catalog:
-- upstream cost = Σ class tokens × class price / 1e6, rounded up once (workers/shared/rating).
-- The prices are null exactly when no catalog price was needed (byok and local calls).
-- Idempotent: `if not exists`, duplicate constraints ignored, the backfill touches only unfilled rows.

alter table usage_events add column if not exists price_catalog_version text;
-- Parts of input_tokens (cached_tokens is the cache reads) and of output_tokens.
alter table usage_events add column if not exists cache_write_tokens integer not null default 0;
alter table usage_events add column if not exists audio_input_tokens integer not null default 0;
alter table usage_events add column if not exists audio_output_tokens integer not null default 0;
alter table usage_events add column if not exists reasoning_tokens integer not null default 0;
-- USD per million tokens of each class, as rated.
alter table usage_events add column if not exists input_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists cached_input_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists cache_write_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists audio_input_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists output_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists reasoning_price_per_mtok_usd numeric(20, 8);
alter table usage_events add column if not exists audio_output_price_per_mtok_usd numeric(20, 8);

-- Rows before this migration were rated with the hand-kept catalog 2026-11-22.1, the only version it
-- ever had (cache writes, audio and reasoning were not priced apart: at the input and output prices).
update usage_events u
   set price_catalog_version = '2026-11-22.1',
       input_price_per_mtok_usd = p.input, cached_input_price_per_mtok_usd = p.cached, cache_write_price_per_mtok_usd = p.input,
       audio_input_price_per_mtok_usd = p.input, output_price_per_mtok_usd = p.output, reasoning_price_per_mtok_usd = p.output,
       audio_output_price_per_mtok_usd = p.output
  from (values ('mock', 'echo', 1.00000000, 2.00000000, 0.50000000),
               ('openai', 'gpt-4o-mini', 0.15000000, 0.60000000, 0.07500000),
               ('openai', 'gpt-4.1-mini', 0.40000000, 1.60000000, 0.10000000),
               ('anthropic', 'claude-sonnet-4-5', 3.00000000, 15.00000000, 0.30000000),
               ('anthropic', 'claude-haiku-4-5', 1.00000000, 5.00000000, 0.10000000)) as p(provider, model, input, output, cached)
 where u.provider = p.provider and u.model = p.model and u.route_mode in ('platform', 'developer_key')
   and u.price_catalog_version is null;

do $$ begin
  alter table usage_events add constraint usage_events_token_parts check (
    least(cache_write_tokens, audio_input_tokens, audio_output_tokens, reasoning_tokens) >= 0
    and cached_tokens + cache_write_tokens + audio_input_tokens <= input_tokens
    and audio_output_tokens + reasoning_tokens <= output_tokens);
exception when duplicate_object then null;
end $$;
do $$ begin
  alter table usage_events add constraint usage_events_prices_recorded check (
    (price_catalog_version is null) = (input_price_per_mtok_usd is null)
    and num_nulls(input_price_per_mtok_usd, cached_input_price_per_mtok_usd, cache_write_price_per_mtok_usd,
      audio_input_price_per_mtok_usd, output_price_per_mtok_usd, reasoning_price_per_mtok_usd,
      audio_output_price_per_mtok_usd) in (0, 7));
exception when duplicate_object then null;
end $$;

-- faucet_book_usage takes the catalog version, the token parts and the prices (a new signature).
drop function if exists faucet_book_usage(text, text, uuid, uuid, uuid, text, text, text, text, integer, integer, integer, boolean,
  numeric, numeric, numeric, numeric, numeric, uuid, jsonb, boolean);

-- faucet_book_usage: migrations/functions/faucet_book_usage.sql
