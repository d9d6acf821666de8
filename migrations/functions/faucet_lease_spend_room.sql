-- The current definition of faucet_lease_spend_room (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The room an app's per-end-user spend limits (p_limit_day per UTC day, p_limit_month per month; null:
-- not set) leave a wallet object's lease: each limit less the end user's retail booked in its period
-- and the holds of any call of theirs in flight on a hold of its own (legacy rows: every call is
-- authorized on a lease now). faucet_settle_lease asks it after its bookings (they count), with the
-- end user's row locked.
-- Answers room (the least of the limits' rooms, may be negative; null without a limit) and
-- spend_limits (null without a limit, else {"day"?: {"limit", "room"}, "month"?: {...}} as 8-decimal
-- strings, room = what that limit allows the lease to hold in all, never below 0).
create or replace function faucet_lease_spend_room(
  p_end_user_id uuid,
  p_limit_day numeric,
  p_limit_month numeric,
  out room numeric,
  out spend_limits jsonb
)
language plpgsql as $$
declare
  v_spent_day numeric;
  v_spent_month numeric;
  v_in_flight numeric;
begin
  if p_limit_day is null and p_limit_month is null then
    return;
  end if;
  select coalesce(sum(u.retail_usd) filter (where u.created_at >= date_trunc('day', now(), 'UTC')), 0),
         coalesce(sum(u.retail_usd), 0)
    into v_spent_day, v_spent_month
    from usage_events u
   where u.end_user_id = p_end_user_id
     and u.created_at >= case when p_limit_month is null then date_trunc('day', now(), 'UTC') else faucet_month_start(now()) end;
  select coalesce(sum(h.amount), 0) into v_in_flight
    from gateway_calls g join balance_holds h on h.request_id = g.money_key
   where g.end_user_id = p_end_user_id and g.status = 'in_flight';
  -- least ignores a limit not set.
  room := least(p_limit_day - v_spent_day - v_in_flight, p_limit_month - v_spent_month - v_in_flight);
  spend_limits := jsonb_strip_nulls(jsonb_build_object(
    'day', case when p_limit_day is not null then jsonb_build_object(
             'limit', p_limit_day::numeric(20, 8)::text,
             'room', greatest(p_limit_day - v_spent_day - v_in_flight, 0)::numeric(20, 8)::text) end,
    'month', case when p_limit_month is not null then jsonb_build_object(
               'limit', p_limit_month::numeric(20, 8)::text,
               'room', greatest(p_limit_month - v_spent_month - v_in_flight, 0)::numeric(20, 8)::text) end));
end
$$;
