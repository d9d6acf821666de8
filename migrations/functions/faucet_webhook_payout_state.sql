-- The current definition of faucet_webhook_payout_state (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Trigger of payouts (docs/webhooks.md): each state a payout takes — requested (pending), processing,
-- paid, cancelled, rejected — is the event payout.<state>, once per payout and state.
create or replace function faucet_webhook_payout_state() returns trigger
language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.status is not distinct from old.status then
    return null;
  end if;
  perform faucet_webhook_event(new.developer_id, 'payout.' || new.status,
    jsonb_build_object('payout_id', new.id, 'status', new.status,
                       'previous_status', case when tg_op = 'UPDATE' then old.status end,
                       'amount_usd', new.amount::numeric(20, 8)::text),
    'payout:' || new.id || ':' || new.status);
  return null;
end
$$;
