-- The current definition of faucet_webhook_spend_limit (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The event "an end user reached an app spend limit" (docs/webhooks.md) for p_period ('day', a UTC
-- day, or 'month'), once per end user, limit and period: written when the end user's retail booked in
-- the period reaches the limit, or when p_refused (a call of theirs was refused by that limit — the
-- room left was less than a call's hold). Nothing when the app has no such limit.
create or replace function faucet_webhook_spend_limit(p_end_user_id uuid, p_period text, p_refused boolean)
returns void
language plpgsql as $$
declare
  v_app record;
  v_limit numeric;
  v_start timestamptz;
  v_spent numeric;
begin
  select a.id, a.developer_id, a.limit_spend_per_day_usd as day_limit, a.limit_spend_per_month_usd as month_limit
    into v_app
    from end_users u join apps a on a.id = u.app_id where u.id = p_end_user_id;
  if not found then
    return;
  end if;
  v_limit := case p_period when 'day' then v_app.day_limit when 'month' then v_app.month_limit end;
  if v_limit is null then
    return;
  end if;
  v_start := case p_period when 'day' then date_trunc('day', now(), 'UTC') else faucet_month_start(now()) end;
  select coalesce(sum(retail_usd), 0) into v_spent from usage_events
   where end_user_id = p_end_user_id and created_at >= v_start;
  if v_spent < v_limit and not p_refused then
    return;
  end if;
  perform faucet_webhook_event(v_app.developer_id, 'end_user.spend_limit_reached',
    jsonb_build_object('app_id', v_app.id, 'end_user_id', p_end_user_id, 'period', p_period,
                       'period_start', v_start, 'limit_usd', v_limit::numeric(20, 8)::text,
                       'spent_usd', v_spent::numeric(20, 8)::text),
    'spend_limit:' || p_end_user_id || ':' || p_period || ':' || to_char(v_start at time zone 'UTC', 'YYYY-MM-DD'));
end
$$;
