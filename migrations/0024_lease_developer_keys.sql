-- The developer-key route on the lease (issue 19, docs/edge.md): a wallet object leases part of a
-- developer key's monthly budget — a row of provider_credential_reservations keyed
-- 'lease:<object name>:<key id>' with an expiry (a call's own reservation has none) — as it leases
-- part of the end user's balance. faucet_reserve_credential_budget counts such a row until it
-- expires. faucet_lease_context answers the developer_key route (it takes the call's worst-case
-- upstream cost), faucet_settle_lease and faucet_open_lease set the budget leases (key_budgets):
-- their signatures and result types change, the old definitions are dropped here and the current
-- ones (functions/) are applied after the numbered migrations. Idempotent.
alter table provider_credential_reservations add column if not exists expires_at timestamptz;
drop function if exists faucet_open_lease(uuid, text, text, numeric, integer, integer);
drop function if exists faucet_settle_lease(uuid, text, jsonb, jsonb, numeric, boolean, integer, integer);
drop function if exists faucet_lease_context(text, text, text, text, text, numeric, boolean, text, jsonb);
