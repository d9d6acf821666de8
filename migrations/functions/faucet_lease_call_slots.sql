-- The current definition of faucet_lease_call_slots (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Under an app's requests-per-minute limit (p_limit_rpm; null: none), the call slots of a wallet
-- object's lease: how many calls the object may hold that Postgres has no record of yet (they count in
-- the end user's 60 s window until their records are written). faucet_settle_lease asks it after
-- writing the flush's records (p_written of them in the window), with the end user's row locked.
-- Kept (p_keep): never below the old slots (p_old_slots) less the records of the window written now
-- (the object's calls authorized while the flush ran stay counted), else the slots asked for
-- (p_call_slots) as far as the window leaves room; released: the slots asked for (the calls in
-- flight, authorized already).
-- Answers slots (null without a limit) and rate_limit (null without a limit, else {"limit", "slots",
-- "window": the epoch ms of the oldest calls of the end user's window, at most the limit}).
create or replace function faucet_lease_call_slots(
  p_end_user_id uuid,
  p_limit_rpm integer,
  p_keep boolean,
  p_old_slots integer,
  p_written integer,
  p_call_slots integer,
  out slots integer,
  out rate_limit jsonb
)
language plpgsql as $$
declare
  v_window integer;
  v_slots integer;
begin
  if p_limit_rpm is null then
    return;
  end if;
  select count(*)::integer into v_window from gateway_calls g
   where g.end_user_id = p_end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds';
  v_slots := case when p_keep then greatest(p_old_slots - p_written, least(coalesce(p_call_slots, 0), p_limit_rpm - v_window), 0)
                  else greatest(coalesce(p_call_slots, 0), 0) end;
  -- The oldest calls of the window: when the object refuses a call, it tells the seconds until one
  -- leaves it, with its own calls counted.
  rate_limit := jsonb_build_object('limit', p_limit_rpm, 'slots', v_slots, 'window', (
    select coalesce(jsonb_agg(w.at order by w.at), '[]'::jsonb)
      from (select (extract(epoch from g.created_at) * 1000)::bigint as at from gateway_calls g
             where g.end_user_id = p_end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds'
             order by g.created_at limit p_limit_rpm) w));
  slots := v_slots;
end
$$;
