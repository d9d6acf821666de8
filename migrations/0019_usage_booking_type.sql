-- One settled model call as the booking functions take it (issue 19, docs/edge.md "Built"):
-- faucet_book_usage_locked books an array of these in set-based statements, for one call
-- (faucet_book_usage) and for a flush of many (faucet_book_usage_batch) alike. The attribute names
-- are the JSON keys of a batch element. A composite type, not a table: nothing is stored in it.
-- Idempotent.
do $$ begin
  create type faucet_usage_booking as (
    request_id text,
    client_request_id text,
    call_id uuid,
    app_id uuid,
    end_user_id uuid,
    feature_key text,
    route_mode text,
    provider text,
    model text,
    input_tokens integer,
    output_tokens integer,
    cached_tokens integer,
    estimated boolean,
    upstream_cost numeric,
    upstream_payable numeric,
    retail numeric,
    developer_revenue numeric,
    platform_share numeric,
    provider_credential_id uuid,
    metadata jsonb,
    allow_receivable boolean,
    price_catalog_version text,
    cache_write_tokens integer,
    audio_input_tokens integer,
    audio_output_tokens integer,
    reasoning_tokens integer,
    input_price numeric,
    cached_input_price numeric,
    cache_write_price numeric,
    audio_input_price numeric,
    output_price numeric,
    reasoning_price numeric,
    audio_output_price numeric
  );
exception when duplicate_object then null;
end $$;
