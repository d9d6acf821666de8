-- Per-end-user limits and the byok route on the lease (issue 19, docs/edge.md): faucet_settle_lease and faucet_open_lease
-- answer the app's spend limits and the room they leave the lease (spend_limits), and under a
-- requests-per-minute limit keep the lease's call slots — the calls its wallet object may authorize
-- before Postgres has their records, which faucet_authorize_call counts as in the window — on the
-- lease's hold (rate_limit). Their signatures and result types change: the old definitions are
-- dropped here and the current ones (functions/) are applied after the numbered migrations.
-- Idempotent.
alter table balance_holds add column if not exists call_slots integer;
drop function if exists faucet_open_lease(uuid, text, text, numeric, integer);
drop function if exists faucet_settle_lease(uuid, text, jsonb, jsonb, numeric, boolean, integer);
-- faucet_lease_context answers the byok route with the end user's key (route_mode, the key, its
-- root, the fallback keys): its result type changes too.
drop function if exists faucet_lease_context(text, text, text, text, text, numeric, boolean, text, jsonb);
