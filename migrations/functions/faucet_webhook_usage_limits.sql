-- The current definition of faucet_webhook_usage_limits (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Statement trigger of usage_events (docs/webhooks.md), after the bookings a statement wrote:
--  * per end user booked, each app spend limit their spend now reaches (faucet_webhook_spend_limit);
--  * per developer key used, its monthly budget's 80 % and 100 % once each per month, counted as the
--    budget counts (this month's recorded upstream cost of the key).
create or replace function faucet_webhook_usage_limits() returns trigger
language plpgsql as $$
declare
  v_user record;
  v_key record;
  v_month timestamptz := faucet_month_start(now());
begin
  for v_user in
    select distinct i.end_user_id from inserted_usage_events i
      join apps a on a.id = i.app_id
     where i.end_user_id is not null and (a.limit_spend_per_day_usd is not null or a.limit_spend_per_month_usd is not null)
  loop
    perform faucet_webhook_spend_limit(v_user.end_user_id, 'day', false);
    perform faucet_webhook_spend_limit(v_user.end_user_id, 'month', false);
  end loop;
  for v_key in
    select k.id, k.developer_id, k.provider, k.masked_key, k.monthly_budget_usd as budget,
           (select coalesce(sum(u.upstream_cost_usd), 0) from usage_events u
             where u.provider_credential_id = k.id and u.created_at >= v_month) as spent
      from provider_credentials k
     where k.id in (select distinct provider_credential_id from inserted_usage_events where provider_credential_id is not null)
       and k.owner_type = 'developer' and k.monthly_budget_usd is not null
  loop
    -- 80 % before 100 %: a booking that crosses both writes both, in that order.
    if v_key.spent * 100 >= v_key.budget * 80 then
      perform faucet_webhook_event(v_key.developer_id, 'provider_key.budget_warning',
        jsonb_build_object('provider_key_id', v_key.id, 'provider', v_key.provider, 'masked_key', v_key.masked_key,
                           'percent', 80, 'monthly_budget_usd', v_key.budget::numeric(20, 8)::text,
                           'spent_usd', v_key.spent::numeric(20, 8)::text, 'month_start', v_month),
        'key_budget:' || v_key.id || ':' || to_char(v_month at time zone 'UTC', 'YYYY-MM') || ':80');
    end if;
    if v_key.spent >= v_key.budget then
      perform faucet_webhook_event(v_key.developer_id, 'provider_key.budget_exhausted',
        jsonb_build_object('provider_key_id', v_key.id, 'provider', v_key.provider, 'masked_key', v_key.masked_key,
                           'percent', 100, 'monthly_budget_usd', v_key.budget::numeric(20, 8)::text,
                           'spent_usd', v_key.spent::numeric(20, 8)::text, 'month_start', v_month),
        'key_budget:' || v_key.id || ':' || to_char(v_month at time zone 'UTC', 'YYYY-MM') || ':100');
    end if;
  end loop;
  return null;
end
$$;
