-- The current definition of faucet_webhook_balance_low (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Trigger of wallets (a user wallet's balance going down): the event "an end user's balance fell
-- below the threshold the developer set" (apps.low_balance_threshold_usd, docs/webhooks.md) when this
-- update takes it from at or above the threshold to below it. Once per crossing: a top-up above the
-- threshold arms it again.
create or replace function faucet_webhook_balance_low() returns trigger
language plpgsql as $$
declare
  v_app record;
begin
  select a.id, a.developer_id, a.low_balance_threshold_usd as threshold into v_app
    from end_users u join apps a on a.id = u.app_id where u.id = new.end_user_id;
  if found and v_app.threshold is not null and old.balance >= v_app.threshold and new.balance < v_app.threshold then
    perform faucet_webhook_event(v_app.developer_id, 'end_user.balance_low',
      jsonb_build_object('app_id', v_app.id, 'end_user_id', new.end_user_id,
                         'balance_usd', new.balance::numeric(20, 8)::text,
                         'threshold_usd', v_app.threshold::numeric(20, 8)::text),
      null);
  end if;
  return null;
end
$$;
