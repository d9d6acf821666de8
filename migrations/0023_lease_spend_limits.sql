-- Per-end-user spend limits on the lease (issue 19, docs/edge.md): faucet_settle_lease and
-- faucet_open_lease answer the app's spend limits and the room they leave the lease (a new column,
-- spend_limits), so their result types change: the old definitions are dropped here and the current
-- ones (functions/) are applied after the numbered migrations. Idempotent.
drop function if exists faucet_open_lease(uuid, text, text, numeric, integer);
drop function if exists faucet_settle_lease(uuid, text, jsonb, jsonb, numeric, boolean, integer);
