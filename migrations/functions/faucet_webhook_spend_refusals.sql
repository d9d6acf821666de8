-- The current definition of faucet_webhook_spend_refusals (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Statement trigger of gateway_call_log (docs/webhooks.md): a call refused by an app spend limit
-- (spend_limit_day, spend_limit_month) means its end user reached it, even with room left below one
-- call's hold; faucet_webhook_spend_limit writes the event once per end user, limit and period.
create or replace function faucet_webhook_spend_refusals() returns trigger
language plpgsql as $$
declare
  v_refusal record;
begin
  for v_refusal in
    select distinct end_user_id, substr(error_code, length('spend_limit_') + 1) as period from inserted_call_log
     where outcome = 'refused' and error_code in ('spend_limit_day', 'spend_limit_month')
  loop
    perform faucet_webhook_spend_limit(v_refusal.end_user_id, v_refusal.period, true);
  end loop;
  return null;
end
$$;
