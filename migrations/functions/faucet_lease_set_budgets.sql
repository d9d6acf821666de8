-- The current definition of faucet_lease_set_budgets (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's budget leases: under p_budgets ({developer key id: target}, 8-decimal amounts),
-- each key's part of its monthly budget the object may reserve for its calls on the developer_key
-- route without asking, a row of provider_credential_reservations keyed p_lease_key || ':' || key id,
-- counted by faucet_reserve_credential_budget until it expires. faucet_settle_lease calls it last, with
-- the keys locked (`for no key update`, in id order, before the wallet). room = the budget less this
-- month's recorded upstream cost of the key (the flush's bookings included) and every other unexpired
-- reservation of it;
--   p_keep:     greatest(old − upstream cost booked now on that key, least(target, room), 0);
--   not p_keep: least(target, greatest(old − cost booked now, room, 0)) (a release keeps the calls in
--               flight covered);
-- old = the row's amount when unexpired, else 0; booked now = by the calls p_booked_calls. It expires
-- at now() + p_ttl_seconds or at the next month's start, whichever is first (a month's budget is never
-- lent into the next); a key that is not an active key of the app's developer (p_developer_id) gets 0
-- (its row deleted).
-- Answers {key id: {"amount": 8-decimal string, "expires_at": epoch ms, or null when 0}}; null without
-- p_budgets.
create or replace function faucet_lease_set_budgets(
  p_lease_key text,
  p_developer_id uuid,
  p_budgets jsonb,
  p_booked_calls uuid[],
  p_keep boolean,
  p_ttl_seconds integer
) returns jsonb
language plpgsql as $$
declare
  v_key record;
  v_reservation record;
  v_key_old numeric;
  v_key_room numeric;
  v_key_new numeric;
  v_key_expires timestamptz;
  v_key_budgets jsonb := '{}'::jsonb;
begin
  if p_budgets is null then
    return null;
  end if;
  for v_key in
    select e.key::uuid as id, e.value::numeric as target, k.monthly_budget_usd as budget,
           (k.owner_type = 'developer' and k.developer_id = p_developer_id and k.status = 'active') as usable
      from jsonb_each_text(p_budgets) as e left join provider_credentials k on k.id = e.key::uuid
     order by e.key::uuid
  loop
    select r.amount, r.expires_at into v_reservation from provider_credential_reservations r
     where r.request_id = p_lease_key || ':' || v_key.id::text for update;
    v_key_old := case when found and v_reservation.expires_at > now() then v_reservation.amount else 0 end;
    -- Less the upstream cost this flush booked on the key (its budget lease reserved it).
    v_key_old := v_key_old - coalesce((select sum(u.upstream_cost_usd) from usage_events u
                                        where u.call_id = any (p_booked_calls) and u.provider_credential_id = v_key.id), 0);
    if not coalesce(v_key.usable, false) then
      v_key_new := 0;
    else
      -- One snapshot for both sums, as faucet_reserve_credential_budget takes them.
      select v_key.budget
             - coalesce((select sum(u.upstream_cost_usd) from usage_events u
                          where u.provider_credential_id = v_key.id and u.created_at >= faucet_month_start(now())), 0)
             - coalesce((select sum(r.amount) from provider_credential_reservations r
                          where r.credential_id = v_key.id and r.request_id <> p_lease_key || ':' || v_key.id::text
                            and r.created_at >= faucet_month_start(now()) and (r.expires_at is null or r.expires_at > now())
                            and not exists (select 1 from usage_events u where u.request_id = r.request_id)), 0)
        into v_key_room;
      v_key_new := case when p_keep then greatest(v_key_old, least(v_key.target, v_key_room), 0)
                        else least(v_key.target, greatest(v_key_old, v_key_room, 0)) end;
    end if;
    v_key_expires := least(now() + make_interval(secs => p_ttl_seconds), faucet_month_start(now()) + interval '1 month');
    if v_key_new > 0 then
      insert into provider_credential_reservations as r (request_id, credential_id, amount, created_at, expires_at)
      values (p_lease_key || ':' || v_key.id::text, v_key.id, v_key_new, now(), v_key_expires)
      on conflict (request_id) do update set amount = excluded.amount, created_at = excluded.created_at, expires_at = excluded.expires_at;
    else
      delete from provider_credential_reservations r where r.request_id = p_lease_key || ':' || v_key.id::text;
    end if;
    v_key_budgets := v_key_budgets || jsonb_build_object(v_key.id::text, jsonb_build_object(
      'amount', v_key_new::numeric(20, 8)::text,
      'expires_at', case when v_key_new > 0 then (extract(epoch from v_key_expires) * 1000)::bigint end));
  end loop;
  return v_key_budgets;
end
$$;
