-- A wallet object's lease as its statements answer it, by name: faucet_settle_lease answers one row,
-- the lease (this type) and each booking's outcome (JSON, in the order given), instead of rows padded
-- to one shape; faucet_open_lease answers the lease alone. Both return types change, so the old
-- functions go first (their files define the new ones).
do $$ begin
  create type faucet_lease_state as (
    -- The lease hold after the statement (8 decimals); `released` after a recall to 0.
    amount_usd numeric,
    expires_at timestamptz,
    status text,
    -- The wallet's balance, and the balance less every active unexpired hold, the lease included.
    wallet_balance_usd numeric,
    available_usd numeric,
    -- null when the app sets no per-end-user spend limit, else {"day"?: {"limit", "room"}, "month"?: {…}}.
    spend_limits jsonb,
    -- null without a requests-per-minute limit, else {"limit", "slots", "window"}.
    rate_limit jsonb,
    -- null when no developer key's budget was leased, else {key id: {"amount", "expires_at"}}.
    key_budgets jsonb
  );
exception when duplicate_object then null;
end $$;

drop function if exists faucet_settle_lease(uuid, text, jsonb, jsonb, numeric, boolean, integer, integer, jsonb);
drop function if exists faucet_open_lease(uuid, text, text, numeric, integer, integer, jsonb);
