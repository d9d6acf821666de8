-- The current definition of faucet_webhook_event (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Writes one event to the webhooks outbox (docs/webhooks.md) in the caller's transaction; an event
-- whose dedupe key was already written is not written again. Marks the transaction as having written
-- one (the setting faucet.webhook_events), so a wallet object's flush knows to wake the relay.
-- Answers whether it wrote.
create or replace function faucet_webhook_event(p_developer_id uuid, p_type text, p_data jsonb, p_dedupe_key text)
returns boolean
language plpgsql as $$
declare
  v_written integer;
begin
  insert into webhook_events (developer_id, type, data, dedupe_key)
  values (p_developer_id, p_type, p_data, p_dedupe_key)
  on conflict (dedupe_key) do nothing;
  get diagnostics v_written = row_count;
  if v_written > 0 then
    perform set_config('faucet.webhook_events', 'written', true);
  end if;
  return v_written > 0;
end
$$;
