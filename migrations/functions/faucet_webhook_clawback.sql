-- The current definition of faucet_webhook_clawback (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Trigger of revenue_clawbacks (docs/webhooks.md): a clawback of the developer's revenue booked
-- (clawback.booked) and its reversal (clawback.reversed), once each.
create or replace function faucet_webhook_clawback() returns trigger
language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.status is not distinct from old.status then
    return null;
  end if;
  perform faucet_webhook_event(new.developer_id, 'clawback.' || new.status,
    jsonb_build_object('clawback_id', new.id, 'status', new.status, 'source_kind', new.source_kind,
                       'amount_usd', new.amount::numeric(20, 8)::text,
                       'end_user_id', (select w.end_user_id from wallets w where w.id = new.user_wallet_id)),
    'clawback:' || new.id || ':' || new.status);
  return null;
end
$$;
