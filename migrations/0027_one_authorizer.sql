-- One authorizer (docs/edge.md): every gateway call is decided by its wallet object (decideCall in
-- workers/shared/authorize/decide-call.ts). The per-call decision retires, and faucet_lease_context
-- answers facts instead of a route: both signatures change, so the old ones go first.
drop function if exists faucet_authorize_call(text, text, uuid, text, text, text, text, text, text, integer, integer, numeric,
  numeric, boolean, integer, integer, integer, integer, text, jsonb);
drop function if exists faucet_lease_context(text, text, text, text, text, numeric, boolean, text, jsonb, numeric);
