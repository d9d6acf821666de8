-- The current definition of faucet_lease_write_records (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's flush, first part (faucet_settle_lease calls it with the wallet locked): the
-- records of the calls it authorized (p_calls: gateway_calls columns, see c_call_fields) absent by id
-- are written in one statement, in their final state: `settled`, closed_at now(), when a booking of
-- the flush (p_bookings) names the call (call_id), as that booking's close would leave it; else
-- `in_flight`. faucet_lease_book_usage puts a record back in flight if its booking is not booked: one
-- write per record instead of an insert and an update.
-- A leased call whose upstream answered is never refused for its client request id (the wallet object
-- enforced idempotency itself): when another call of the end user holds that claim
-- (gateway_calls_idempotency) or an earlier record of this flush does, the record keeps
-- `<client_request_id>#<call id>` instead (deterministic: a replay finds the record by id and writes
-- nothing). Should another writer take the same claim at the same instant, the insert fails (unique
-- violation): the flush rolls back whole and its retry finds the claim.
-- A record that is malformed or not a leased call of this end user (a platform call, a byok call with
-- one of their keys, a developer_key call with a key of the app's developer) is not written.
-- Answers refused_calls ({call id: why, from 'the call record …'}: every booking naming it is refused),
-- closed_calls (the records written settled) and written_in_window (the records written now that are
-- in the end user's 60 s window: the object's call slots held them).
create or replace function faucet_lease_write_records(
  p_end_user_id uuid,
  p_app_id uuid,
  p_developer_id uuid,
  p_calls jsonb,
  p_bookings jsonb,
  out refused_calls jsonb,
  out closed_calls uuid[],
  out written_in_window integer
)
language plpgsql
-- One generic plan for its statement: it was planned again at every flush (about 0.5 ms of a 50-call
-- flush's 17 ms in the ledger bench; its plan is index probes either way).
set plan_cache_mode = force_generic_plan
as $$
declare
  c_call_fields constant text[] := array[
    'id', 'money_key', 'client_request_id', 'fingerprint', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider',
    'model', 'provider_credential_id', 'bound_input_tokens', 'bound_output_tokens', 'deadline_at', 'created_at',
    'developer_price_per_mtok_usd', 'open_fee_usd', 'developer_share_bps', 'platform_markup_bps', 'platform_fee_bps',
    'fallback_models', 'bound_cache_lifetime'];
  c_call_required constant text[] := array[
    'id', 'money_key', 'client_request_id', 'fingerprint', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider',
    'model', 'bound_input_tokens', 'bound_output_tokens', 'deadline_at', 'created_at', 'developer_share_bps'];
  v_named_calls jsonb;
  v_cast_ok boolean := true;
begin
  -- The calls named by a booking (a set: call id → true).
  select coalesce(jsonb_object_agg(lower(e.value ->> 'call_id'), true), '{}'::jsonb)
    into v_named_calls
    from jsonb_array_elements(p_bookings) as e
   where jsonb_typeof(e.value) = 'object' and e.value ->> 'call_id' is not null;
  -- Why each record that would be written is not (by id); the rest written. Every value of the right
  -- type: the statement casts each record once; only when a cast fails (the statement is then rolled
  -- back to its savepoint) is it run again with each field checked.
  loop
    begin
      with records as (
        -- `offset 0` in each lookup of gateway_calls keeps it an index probe per record: as a join (or a
        -- hashed subplan) the planner scanned all of gateway_calls for each flush (the ledger bench).
        select e.value, e.ordinality, (e.value ->> 'id')::uuid as id
          from jsonb_array_elements(p_calls) with ordinality as e
         where not exists (select 1 from gateway_calls g where g.id = (e.value ->> 'id')::uuid offset 0)
      ), shapes as materialized (
        select r.*,
               case
                 when (r.value - c_call_fields) <> '{}'::jsonb
                   then (select 'has an unknown field ' || k from jsonb_object_keys(r.value - c_call_fields) as k order by k limit 1)
                 when not (jsonb_strip_nulls(r.value) ?& c_call_required)
                   then (select 'misses the field ' || f from unnest(c_call_required) with ordinality as q(f, n)
                          where r.value ->> f is null order by n limit 1)
                 when not v_cast_ok then (select format('has a %s that is not a valid %s', a.attname, format_type(a.atttypid, a.atttypmod))
                         from pg_attribute a
                        where a.attrelid = 'gateway_calls'::regclass and a.attnum > 0 and not a.attisdropped
                          and a.attname = any (c_call_fields) and r.value ->> a.attname is not null
                          and not pg_input_is_valid(r.value ->> a.attname, format_type(a.atttypid, a.atttypmod))
                        order by a.attnum limit 1)
               end as shape
          from records r
      ), cast_records as materialized (
        -- Only a record of the right shape is cast (a refused one may not even cast).
        select s.*, case when s.shape is null then jsonb_populate_record(null::gateway_calls, s.value) end as c
          from shapes s
      ), judged as materialized (
        select x.id, x.ordinality, x.c,
               coalesce(x.shape,
                        case
                          when (x.c).end_user_id <> p_end_user_id then 'is not of this wallet''s end user'
                          when (x.c).app_id <> p_app_id then 'is not of the end user''s app'
                          when not ((x.c).route_mode = 'platform' and (x.c).provider_credential_id is null)
                               and not ((x.c).route_mode = 'byok' and exists (
                                 select 1 from provider_credentials k
                                  where k.id = (x.c).provider_credential_id and k.owner_type = 'end_user'
                                    and k.end_user_id = p_end_user_id offset 0))
                               and not ((x.c).route_mode = 'developer_key' and exists (
                                 select 1 from provider_credentials k
                                  where k.id = (x.c).provider_credential_id and k.owner_type = 'developer'
                                    and k.developer_id = p_developer_id offset 0))
                            then 'is not a platform call, a byok call with a key of this end user or a developer_key call with a key of the app''s developer (only those are leased)'
                          when (x.c).money_key like 'lease:%' then 'has a lease key as money key'
                          when exists (select 1 from gateway_calls g where g.money_key = (x.c).money_key offset 0)
                            then 'has the money key of another call'
                          when (x.c).bound_input_tokens < 0 or (x.c).bound_output_tokens < 0 then 'has a negative bound'
                          when least((x.c).developer_price_per_mtok_usd, (x.c).open_fee_usd) < 0
                            or (x.c).developer_price_per_mtok_usd <> round((x.c).developer_price_per_mtok_usd, 8)
                            or (x.c).open_fee_usd <> round((x.c).open_fee_usd, 8)
                            then 'has a price that is negative or of more than 8 decimals'
                        end) as refusal
          from cast_records x
      ), accepted as (
        select (j.c).*, j.ordinality,
               row_number() over (partition by (j.c).client_request_id order by j.ordinality) as nth,
               row_number() over (partition by j.id order by j.ordinality) as copy
          from judged j
         where not exists (select 1 from judged k where k.id = j.id and k.refusal is not null)
      ), written as (
        insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                   provider, model, provider_credential_id, bound_input_tokens, bound_output_tokens, status,
                                   deadline_at, created_at, closed_at, developer_price_per_mtok_usd, open_fee_usd,
                                   developer_share_bps, platform_markup_bps, platform_fee_bps, fallback_models,
                                   bound_cache_lifetime)
        select r.id, r.money_key,
               case when r.nth > 1 or exists (
                      select 1 from gateway_calls g
                       where g.end_user_id = r.end_user_id and g.client_request_id = r.client_request_id and g.status <> 'abandoned'
                       offset 0)
                    then r.client_request_id || '#' || r.id::text
                    else r.client_request_id end,
               r.fingerprint, r.app_id, r.end_user_id, r.feature_key, r.route_mode, r.provider, r.model, r.provider_credential_id,
               r.bound_input_tokens, r.bound_output_tokens,
               case when v_named_calls ? r.id::text then 'settled' else 'in_flight' end, r.deadline_at, r.created_at,
               case when v_named_calls ? r.id::text then now() end,
               r.developer_price_per_mtok_usd, r.open_fee_usd, r.developer_share_bps, r.platform_markup_bps, r.platform_fee_bps,
               r.fallback_models, r.bound_cache_lifetime
          from accepted r
         where r.copy = 1
         order by r.ordinality
        returning id, status, created_at
      )
      select coalesce(jsonb_object_agg(j.id::text, 'the call record ' || j.refusal) filter (where j.refusal is not null), '{}'::jsonb),
             (select array_agg(w.id) from written w where w.status = 'settled'),
             (select count(*)::integer from written w where w.created_at > now() - interval '60 seconds')
        into refused_calls, closed_calls, written_in_window
        from judged j;
      exit;
    exception when data_exception then
      if not v_cast_ok then
        raise;
      end if;
      v_cast_ok := false;
    end;
  end loop;
end
$$;
