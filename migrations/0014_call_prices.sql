-- Prices frozen at authorization (issue 15: a price change applies to calls authorized after it).
-- faucet_authorize_call records on each call the feature's prices and the rating settings it was
-- authorized with, so the stale-call sweeper (workers/shared/calls/sweep-stale-calls.ts) books a call
-- the gateway never settled at those, never at prices changed since (which could exceed its hold).
-- All null on calls authorized before this migration: the sweeper reads those as before (the
-- feature's and app's current rows, its own settings). Idempotent.

-- The feature's developer price per million tokens (null: at catalog cost) and open fee (null: 0).
alter table gateway_calls add column if not exists developer_price_per_mtok_usd numeric(20, 8);
alter table gateway_calls add column if not exists open_fee_usd numeric(20, 8);
-- The app's channel share of the platform margin; the platform's markup and fee (basis points) of
-- the authorizing gateway (null when an older gateway did not pass them: the sweeper's own).
alter table gateway_calls add column if not exists developer_share_bps integer;
alter table gateway_calls add column if not exists platform_markup_bps integer;
alter table gateway_calls add column if not exists platform_fee_bps integer;

-- faucet_authorize_call takes the gateway's markup and fee (new trailing parameters, defaulting to null).
drop function if exists faucet_authorize_call(text, text, uuid, text, text, text, text, text, text, integer, integer, numeric,
  numeric, boolean, integer, integer);
