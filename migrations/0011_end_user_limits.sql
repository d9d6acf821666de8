-- Per-end-user limits enforced at the gateway (docs/gateway.md, "Per-end-user limits"): the
-- authorize statement counts one end user's calls of the last 60 s (requests per minute) and sums
-- the holds of their calls in flight (spend per day / month; booked usage is read through
-- usage_events_end_user_created). Only apps with a limit run these reads. Idempotent.

create index if not exists gateway_calls_end_user_created on gateway_calls (end_user_id, created_at);
create index if not exists gateway_calls_end_user_in_flight on gateway_calls (end_user_id) where status = 'in_flight';

-- faucet_authorize_call now also answers the limit a refusal names and a retry-after (a new return type).
drop function if exists faucet_authorize_call(text, text, uuid, text, text, text, text, text, text, integer, integer, numeric,
  numeric, boolean, integer, integer);
