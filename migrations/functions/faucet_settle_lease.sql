-- The current definition of faucet_settle_lease (migrations/README.md: edit it here; the runner re-applies a changed file).
-- One statement of a wallet object (issue 19, docs/edge.md): book a flush of the calls it authorized
-- against its lease, and set the lease — a hold on the end user's wallet keyed by p_lease_key
-- ('lease:<object name>'; another prefix is refused, so a lease never shares a key with a call, a
-- payout or a top-up). With the wallet row locked (`for no key update`, as every hold and booking
-- takes it), in this order:
--   a. the call records (p_calls: gateway_calls columns, see c_call_fields) absent by id are written
--      `in_flight`, so each booking closes its call exactly as a per-call booking does. A leased call
--      whose upstream answered is never refused for its record's client request id: when another
--      call of the end user holds that claim (gateway_calls_idempotency) or an earlier record of this
--      flush does, the record keeps `<client_request_id>#<call id>` instead (deterministic: a replay
--      finds the record by id and writes nothing). The wallet object enforced idempotency itself.
--      A record that is malformed or not a platform call of this end user is not written, and every
--      booking naming it is refused (invalid_request, the message says why). A per-call
--      authorization claiming the same client request id at the same instant makes the insert fail
--      (unique violation): the statement rolls back whole and the retry finds the claim.
--   b. the lease's amount is set to 0 (inside this transaction) and the elements (p_bookings, as
--      faucet_book_usage_batch takes them) are booked by faucet_book_usage_batch: the lease reserved
--      this money, so it does not count against them. Same outcomes per element as the batch
--      (booked / already_booked / refused + reason); an element of another end user or under a
--      lease key is refused here (invalid_request). A duplicate books nothing and reduces nothing.
--   c. the lease, from the balance the bookings left and every other active unexpired hold:
--      p_keep:     greatest(old − retail booked now, least(p_target, balance − other holds), 0) — the
--                  object's reservations made while this flush was in flight stay covered; old = the
--                  lease's amount if it was active and unexpired, else 0;
--      not p_keep: greatest(0, least(p_target, balance − other holds)) (a recall);
--      expires now() + p_ttl_seconds; 'active', or 'released' when not p_keep and the amount is 0
--      (p_target 0, p_keep false: the release). The hold row is created on first use and
--      reactivated when it had expired or been released.
-- Result: row 0 is the lease (outcome 'lease', request_id = the lease key, lease_* columns, the
-- wallet's balance after and available = balance − all active holds incl. the lease); rows 1..n are
-- the elements in order, with the batch's columns (lease_* null). A pure renewal returns row 0 alone.
-- Any error but the per-element refusals (a fault, a deadlock, a cut connection, a malformed
-- argument: 22023) aborts the statement: nothing written, the lease unchanged; retry the same flush.
-- At most 1000 call records and 1000 bookings.
create or replace function faucet_settle_lease(
  p_end_user_id uuid,
  p_lease_key text,
  p_calls jsonb,
  p_bookings jsonb,
  p_target numeric,
  p_keep boolean,
  p_ttl_seconds integer
) returns table (
  ordinal integer,
  request_id text,
  outcome text,
  reason text,
  message text,
  usage_event_id uuid,
  ledger_transaction_id uuid,
  upstream_cost_usd numeric,
  retail_usd numeric,
  developer_revenue_usd numeric,
  platform_share_usd numeric,
  balance_usd numeric,
  receivable_usd numeric,
  created_at timestamptz,
  lease_amount_usd numeric,
  lease_expires_at timestamptz,
  lease_status text,
  wallet_balance_usd numeric,
  available_usd numeric
)
language plpgsql as $$
#variable_conflict use_column
declare
  c_call_fields constant text[] := array[
    'id', 'money_key', 'client_request_id', 'fingerprint', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider',
    'model', 'provider_credential_id', 'bound_input_tokens', 'bound_output_tokens', 'deadline_at', 'created_at',
    'developer_price_per_mtok_usd', 'open_fee_usd', 'developer_share_bps', 'platform_markup_bps', 'platform_fee_bps',
    'fallback_models'];
  c_call_required constant text[] := array[
    'id', 'money_key', 'client_request_id', 'fingerprint', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider',
    'model', 'bound_input_tokens', 'bound_output_tokens', 'deadline_at', 'created_at', 'developer_share_bps'];
  v_app_id uuid;
  v_wallet_id uuid;
  v_balance numeric;
  v_lease balance_holds%rowtype;
  v_old numeric := 0;
  v_new numeric;
  v_others numeric;
  v_status text;
  v_refused_calls jsonb;
  v_count integer;
  v_refusals text[];
  v_sent jsonb;
  v_sent_positions integer[];
  v_results jsonb[];
  v_row record;
  v_booked numeric := 0;
  v_cast_ok boolean := true;
begin
  if p_end_user_id is null or p_lease_key is null or p_lease_key not like 'lease:_%' then
    raise exception 'a lease needs an end user and a key starting with lease:' using errcode = '22023';
  end if;
  if p_target is null or p_target < 0 or p_target <> round(p_target, 8) or p_keep is null or p_ttl_seconds is null
     or p_ttl_seconds <= 0 then
    raise exception 'the lease target must be a non-negative amount of at most 8 decimals, keep given, the lifetime positive'
      using errcode = '22023';
  end if;
  if jsonb_typeof(p_calls) is distinct from 'array' or jsonb_typeof(p_bookings) is distinct from 'array' then
    raise exception 'calls and bookings must be JSON arrays' using errcode = '22023';
  end if;
  if jsonb_array_length(p_calls) > 1000 or jsonb_array_length(p_bookings) > 1000 then
    raise exception 'at most 1000 call records and 1000 bookings per flush' using errcode = '22023';
  end if;
  if exists (select 1 from jsonb_array_elements(p_calls) e
              where jsonb_typeof(e.value) is distinct from 'object' or not pg_input_is_valid(e.value ->> 'id', 'uuid')) then
    raise exception 'every call record must be a JSON object with a uuid id' using errcode = '22023';
  end if;

  -- The wallet, locked: every hold, booking and settle of it waits here.
  select u.app_id into v_app_id from end_users u where u.id = p_end_user_id;
  if not found then
    raise exception 'no such end user' using errcode = 'P0002';
  end if;
  select w.id, w.balance into v_wallet_id, v_balance from wallets w where w.end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    select w.balance into v_balance from wallets w where w.id = v_wallet_id for no key update;
  end if;

  select * into v_lease from balance_holds h where h.request_id = p_lease_key for update;
  if found then
    if v_lease.wallet_id <> v_wallet_id then
      raise exception 'the lease key names a hold of another wallet' using errcode = '22023';
    end if;
    if v_lease.status = 'active' and v_lease.expires_at > now() then
      v_old := v_lease.amount;
    end if;
    -- b. The lease reserved the money of these bookings: it does not count against them.
    update balance_holds h set amount = 0 where h.id = v_lease.id;
  end if;

  -- a. The call records: why each one that would be written is not (by id); then the rest written.
  --    Every value of the right type: one cast over all; only when it fails, each field is checked.
  begin
    perform jsonb_populate_record(null::gateway_calls, e.value) from jsonb_array_elements(p_calls) as e;
  exception when data_exception then
    v_cast_ok := false;
  end;
  with records as (
    select e.value, e.ordinality, (e.value ->> 'id')::uuid as id
      from jsonb_array_elements(p_calls) with ordinality as e
     where not exists (select 1 from gateway_calls g where g.id = (e.value ->> 'id')::uuid)
  ), shapes as (
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
  ), judged as (
    select s.id,
           case when s.shape is not null then s.shape else (
             select case
                      when c.end_user_id <> p_end_user_id then 'is not of this wallet''s end user'
                      when c.app_id <> v_app_id then 'is not of the end user''s app'
                      when c.route_mode <> 'platform' or c.provider_credential_id is not null
                        then 'is not a platform call (only those are leased)'
                      when c.money_key like 'lease:%' then 'has a lease key as money key'
                      when exists (select 1 from gateway_calls g where g.money_key = c.money_key)
                        then 'has the money key of another call'
                      when c.bound_input_tokens < 0 or c.bound_output_tokens < 0 then 'has a negative bound'
                      when least(c.developer_price_per_mtok_usd, c.open_fee_usd) < 0
                        or c.developer_price_per_mtok_usd <> round(c.developer_price_per_mtok_usd, 8)
                        or c.open_fee_usd <> round(c.open_fee_usd, 8)
                        then 'has a price that is negative or of more than 8 decimals'
                    end
               from jsonb_populate_record(null::gateway_calls, s.value) as c) end as refusal
      from shapes s
  )
  select coalesce(jsonb_object_agg(j.id::text, 'the call record ' || j.refusal) filter (where j.refusal is not null), '{}'::jsonb)
    into v_refused_calls
    from judged j;

  with accepted as materialized (
    -- Only the records judged above are cast (a refused one may not even cast).
    select e.value, e.ordinality
      from jsonb_array_elements(p_calls) with ordinality as e
     where not (v_refused_calls ? ((e.value ->> 'id')::uuid)::text)
       and not exists (select 1 from gateway_calls g where g.id = (e.value ->> 'id')::uuid)
  ), records as (
    select c.*, a.ordinality,
           row_number() over (partition by c.client_request_id order by a.ordinality) as nth,
           row_number() over (partition by c.id order by a.ordinality) as copy
      from accepted a cross join lateral jsonb_populate_record(null::gateway_calls, a.value) as c
  )
  insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                             provider, model, provider_credential_id, bound_input_tokens, bound_output_tokens, status,
                             deadline_at, created_at, developer_price_per_mtok_usd, open_fee_usd, developer_share_bps,
                             platform_markup_bps, platform_fee_bps, fallback_models)
  select r.id, r.money_key,
         case when r.nth > 1 or exists (
                select 1 from gateway_calls g
                 where g.end_user_id = r.end_user_id and g.client_request_id = r.client_request_id and g.status <> 'abandoned')
              then r.client_request_id || '#' || r.id::text
              else r.client_request_id end,
         r.fingerprint, r.app_id, r.end_user_id, r.feature_key, r.route_mode, r.provider, r.model, r.provider_credential_id,
         r.bound_input_tokens, r.bound_output_tokens, 'in_flight', r.deadline_at, r.created_at,
         r.developer_price_per_mtok_usd, r.open_fee_usd, r.developer_share_bps, r.platform_markup_bps, r.platform_fee_bps,
         r.fallback_models
    from records r
   where r.copy = 1
   order by r.ordinality;

  -- b. The bookings: refused here when not of this wallet, under a lease key, or naming a refused
  --    record; the rest booked by the batch (which judges their shape and everything else).
  v_count := jsonb_array_length(p_bookings);
  v_results := array_fill(null::jsonb, array[v_count]);
  select array_agg(
           case
             when jsonb_typeof(e.value) is distinct from 'object' then null
             when e.value ->> 'end_user_id' is not null and lower(e.value ->> 'end_user_id') <> p_end_user_id::text
               then 'the booking is not of this wallet''s end user'
             when e.value ->> 'request_id' like 'lease:%' then 'a booking cannot use a lease key'
             when e.value ->> 'call_id' is not null then v_refused_calls ->> lower(e.value ->> 'call_id')
           end order by e.ordinality)
    into v_refusals
    from jsonb_array_elements(p_bookings) with ordinality as e;
  select array_agg(e.ordinality::integer order by e.ordinality), jsonb_agg(e.value order by e.ordinality)
    into v_sent_positions, v_sent
    from jsonb_array_elements(p_bookings) with ordinality as e
   where v_refusals[e.ordinality::integer] is null;
  for v_row in select * from faucet_book_usage_batch(coalesce(v_sent, '[]'::jsonb)) loop
    v_results[v_sent_positions[v_row.ordinal]] := to_jsonb(v_row);
    if v_row.outcome = 'booked' then
      v_booked := v_booked + v_row.retail_usd;
    end if;
  end loop;

  -- c. The lease, from the balance the bookings left.
  select w.balance into v_balance from wallets w where w.id = v_wallet_id;
  v_others := faucet_held(v_wallet_id, p_lease_key);
  if p_keep then
    v_new := greatest(v_old - v_booked, least(p_target, v_balance - v_others), 0);
  else
    v_new := greatest(0, least(p_target, v_balance - v_others));
  end if;
  v_status := case when not p_keep and v_new = 0 then 'released' else 'active' end;
  if v_lease.id is null then
    insert into balance_holds (wallet_id, request_id, amount, status, expires_at, closed_at)
    values (v_wallet_id, p_lease_key, v_new, v_status, now() + make_interval(secs => p_ttl_seconds),
            case when v_status = 'released' then now() end)
    returning * into v_lease;
  else
    update balance_holds h
       set amount = v_new, status = v_status, expires_at = now() + make_interval(secs => p_ttl_seconds),
           closed_at = case when v_status = 'released' then now() end
     where h.id = v_lease.id
    returning * into v_lease;
  end if;

  return query
  select 0, p_lease_key, 'lease'::text, null::text, null::text, null::uuid, null::uuid, null::numeric, null::numeric,
         null::numeric, null::numeric, null::numeric, null::numeric, null::timestamptz,
         v_lease.amount::numeric(20, 8), v_lease.expires_at, v_lease.status, v_balance::numeric(20, 8),
         (v_balance - faucet_held(v_wallet_id, null))::numeric(20, 8);
  return query
  select e.ordinality::integer, e.value ->> 'request_id',
         coalesce(r.value ->> 'outcome', 'refused'),
         case when r.value is null then 'invalid_request' else r.value ->> 'reason' end,
         coalesce(r.value ->> 'message', v_refusals[e.ordinality::integer]),
         (r.value ->> 'usage_event_id')::uuid, (r.value ->> 'ledger_transaction_id')::uuid,
         (r.value ->> 'upstream_cost_usd')::numeric(20, 8), (r.value ->> 'retail_usd')::numeric(20, 8),
         (r.value ->> 'developer_revenue_usd')::numeric(20, 8), (r.value ->> 'platform_share_usd')::numeric(20, 8),
         (r.value ->> 'balance_usd')::numeric(20, 8), (r.value ->> 'receivable_usd')::numeric(20, 8),
         (r.value ->> 'created_at')::timestamptz, null::numeric, null::timestamptz, null::text, null::numeric, null::numeric
    from jsonb_array_elements(p_bookings) with ordinality as e
    join unnest(v_results) with ordinality as r(value, n) on r.n = e.ordinality
   order by e.ordinality;
end
$$;
