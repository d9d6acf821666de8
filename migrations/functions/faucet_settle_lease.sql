-- The current definition of faucet_settle_lease (migrations/README.md: edit it here; the runner re-applies a changed file).
-- One statement of a wallet object (docs/edge.md): book a flush of the calls it authorized
-- against its lease, and set the lease — a hold on the end user's wallet keyed by p_lease_key
-- ('lease:<object name>'; another prefix is refused, so a lease never shares a key with a call, a
-- payout or a top-up). With the wallet row locked (`for no key update`, as every hold and booking
-- takes it), in this order:
--   a. the call records (p_calls: gateway_calls columns, see c_call_fields) absent by id are written
--      in the state a per-call booking would leave them in: `settled`, closed_at now(), when a booking
--      of this flush names the call and is booked; else `in_flight` (a record named by a booking is
--      written closed and put back in flight in this statement if that booking is not booked — one
--      write per record instead of an insert and an update). A leased call whose upstream answered
--      is never refused for its record's client request id: when another call of the end user holds
--      that claim (gateway_calls_idempotency) or an earlier record of this flush does, the record
--      keeps `<client_request_id>#<call id>` instead (deterministic: a replay finds the record by id
--      and writes nothing). The wallet object enforced idempotency itself.
--      A record that is malformed or not a platform call of this end user is not written, and every
--      booking naming it is refused (invalid_request, the message says why). A per-call
--      authorization claiming the same client request id at the same instant makes the insert fail
--      (unique violation): the statement rolls back whole and the retry finds the claim.
--   b. the lease's amount is set to 0 (inside this transaction) and the elements (p_bookings, as
--      faucet_book_usage_batch takes them) are booked by faucet_book_usage_batch: the lease reserved
--      this money, so it does not count against them. Same outcomes per element as the batch
--      (booked / already_booked / refused + reason); an element of another end user or under a
--      lease key is refused here (invalid_request). A duplicate books nothing and reduces nothing.
--   c. the lease, from the balance the bookings left and every other active unexpired hold, and
--      under the app's per-end-user spend limits (per UTC day / month) the room they leave: the limit
--      less the end user's retail booked in that period (this flush's bookings included) and the holds
--      of their per-call calls in flight (faucet_authorize_call's step 6 counts the lease as in flight
--      in turn, so the lease and the per-call calls share each limit; with a limit the end user's row
--      is locked first, as that step does, so the two never count without each other):
--      p_keep:     greatest(old − retail booked now, least(p_target, balance − other holds, room), 0) —
--                  the object's reservations made while this flush was in flight stay covered; old =
--                  the lease's amount if it was active and unexpired, else 0;
--      not p_keep: greatest(0, least(p_target, balance − other holds)) (a recall);
--      expires now() + p_ttl_seconds; 'active', or 'released' when not p_keep and the amount is 0
--      (p_target 0, p_keep false: the release). The hold row is created on first use and
--      reactivated when it had expired or been released.
--   d. under p_budgets ({developer key id: target}, 8-decimal amounts): each key's budget lease — the
--      part of a developer key's monthly budget the object may reserve for its calls on the
--      developer_key route without asking, a row of provider_credential_reservations keyed
--      p_lease_key || ':' || key id, counted by faucet_reserve_credential_budget (the per-call
--      path's budget check) until it expires. The keys are locked (`for no key update`, in id
--      order) right after the end user's row and before the wallet, the order faucet_authorize_call
--      takes them in. room = the budget less this month's recorded upstream cost of the key (this
--      flush's bookings included) and every other unexpired reservation of it;
--      p_keep:     greatest(old − upstream cost booked now on that key, least(target, room), 0);
--      not p_keep: least(target, greatest(old − cost booked now, room, 0)) (a release keeps the calls
--                  in flight covered);
--      old = the row's amount when unexpired, else 0. It expires at now() + p_ttl_seconds or at the
--      next month's start, whichever is first (a month's budget is never lent into the next); a
--      key that is not an active key of the app's developer gets 0 (its row deleted).
-- Result: ordinal 0 is the lease (outcome 'lease', request_id = the lease key, lease_* columns, the
-- wallet's balance after, available = balance − all active holds incl. the lease, and spend_limits:
-- null when the app sets none, else {"day"?: {"limit", "room"}, "month"?: {...}} as 8-decimal strings,
-- room = what that limit allows the lease to hold in all, never below 0), and rate_limit: null
-- without a requests-per-minute limit, else {"limit", "slots" (see c), "window": the epoch ms of the
-- oldest calls of the end user's 60 s window, at most the limit}), and key_budgets: null without
-- p_budgets, else {key id: {"amount": 8-decimal string, "expires_at": epoch ms or null when 0}};
-- ordinals 1..n
-- are the elements, with the batch's columns (lease_* null). Rows come in no set order: read them by
-- ordinal. A pure renewal returns the lease's row alone.
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
  p_ttl_seconds integer,
  -- Under a requests-per-minute limit: the calls the object wants to be able to hold unflushed (its
  -- calls in flight and settled but not in this flush, plus a few to come); ignored without one.
  p_call_slots integer default null,
  -- The developer keys whose budget the object leases: {key id: target amount} (see d); null: none.
  p_budgets jsonb default null
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
  available_usd numeric,
  spend_limits jsonb,
  rate_limit jsonb,
  key_budgets jsonb
)
language plpgsql
-- Its statements keep one generic plan each: the call records' statement was planned again at every
-- flush (about 0.5 ms of a 50-call flush's 17 ms in the ledger bench; its plan is index probes either way).
set plan_cache_mode = force_generic_plan
as $$
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
  v_limit_day numeric;
  v_limit_month numeric;
  v_spent_day numeric;
  v_spent_month numeric;
  v_in_flight numeric;
  v_room numeric;
  v_spend_limits jsonb;
  v_limit_rpm integer;
  v_written integer := 0;
  v_old_slots integer := 0;
  v_window integer;
  v_slots integer;
  v_rate_limit jsonb;
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
  v_named_calls jsonb;
  v_closed_calls uuid[];
  v_booked_calls uuid[] := '{}';
  v_reopen uuid[];
  v_booked numeric := 0;
  v_cast_ok boolean := true;
  v_index integer;
  v_developer_id uuid;
  v_key record;
  v_reservation record;
  v_key_old numeric;
  v_key_room numeric;
  v_key_new numeric;
  v_key_expires timestamptz;
  v_key_budgets jsonb;
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
  if p_budgets is not null and (
       jsonb_typeof(p_budgets) <> 'object'
       or (select count(*) from jsonb_object_keys(p_budgets)) > 100
       or exists (select 1 from jsonb_each_text(p_budgets) e
                   where not pg_input_is_valid(e.key, 'uuid') or not pg_input_is_valid(e.value, 'numeric')
                      or e.value::numeric < 0 or e.value::numeric <> round(e.value::numeric, 8))) then
    raise exception 'budgets must be a JSON object of at most 100 key ids, each with a non-negative amount of at most 8 decimals'
      using errcode = '22023';
  end if;

  select u.app_id, a.developer_id, a.limit_spend_per_day_usd, a.limit_spend_per_month_usd, a.limit_requests_per_minute
    into v_app_id, v_developer_id, v_limit_day, v_limit_month, v_limit_rpm
    from end_users u join apps a on a.id = u.app_id where u.id = p_end_user_id;
  if not found then
    raise exception 'no such end user' using errcode = 'P0002';
  end if;
  -- Under a limit the end user's row first (faucet_authorize_call's step 3 takes it before the wallet
  -- too): a per-call authorization counts this lease, or this statement counts its hold and its call.
  if v_limit_day is not null or v_limit_month is not null or v_limit_rpm is not null then
    perform 1 from end_users u where u.id = p_end_user_id for no key update;
  end if;
  -- d. The developer keys whose budget is leased, before the wallet (faucet_authorize_call reserves a
  --    key's budget before it holds the wallet), in one order: two flushes never wait on each other
  --    in a cycle.
  if p_budgets is not null then
    perform 1 from provider_credentials k
     where k.id in (select e.key::uuid from jsonb_object_keys(p_budgets) as e(key))
     order by k.id
       for no key update;
  end if;
  -- The wallet, locked: every hold, booking and settle of it waits here.
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
      v_old_slots := coalesce(v_lease.call_slots, 0);
    end if;
    -- b. The lease reserved the money of these bookings: it does not count against them.
    update balance_holds h set amount = 0 where h.id = v_lease.id;
  end if;

  -- a. The call records: why each one that would be written is not (by id); the rest written, in one
  --    statement (each record cast once). A record that a booking of this flush names (call_id) is
  --    written already closed — `settled`, closed_at now(), what that booking's close sets — and put
  --    back in flight below if that booking is not booked; the others are written `in_flight`.
  --    Every value of the right type: the statement casts each record once; only when a cast fails
  --    (the statement is then rolled back to its savepoint) is it run again with each field checked.
  -- The calls named by a booking (a set: call id → true).
  select coalesce(jsonb_object_agg(lower(e.value ->> 'call_id'), true), '{}'::jsonb)
    into v_named_calls
    from jsonb_array_elements(p_bookings) as e
   where jsonb_typeof(e.value) = 'object' and e.value ->> 'call_id' is not null;
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
                          when (x.c).app_id <> v_app_id then 'is not of the end user''s app'
                          when not ((x.c).route_mode = 'platform' and (x.c).provider_credential_id is null)
                               and not ((x.c).route_mode = 'byok' and exists (
                                 select 1 from provider_credentials k
                                  where k.id = (x.c).provider_credential_id and k.owner_type = 'end_user'
                                    and k.end_user_id = p_end_user_id offset 0))
                               and not ((x.c).route_mode = 'developer_key' and exists (
                                 select 1 from provider_credentials k
                                  where k.id = (x.c).provider_credential_id and k.owner_type = 'developer'
                                    and k.developer_id = v_developer_id offset 0))
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
                                   developer_share_bps, platform_markup_bps, platform_fee_bps, fallback_models)
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
               r.fallback_models
          from accepted r
         where r.copy = 1
         order by r.ordinality
        returning id, status, created_at
      )
      select coalesce(jsonb_object_agg(j.id::text, 'the call record ' || j.refusal) filter (where j.refusal is not null), '{}'::jsonb),
             (select array_agg(w.id) from written w where w.status = 'settled'),
             -- The records written now that are in the end user's 60 s window (the object's slots held them).
             (select count(*)::integer from written w where w.created_at > now() - interval '60 seconds')
        into v_refused_calls, v_closed_calls, v_written
        from judged j;
      exit;
    exception when data_exception then
      if not v_cast_ok then
        raise;
      end if;
      v_cast_ok := false;
    end;
  end loop;

  -- b. The bookings: refused here when not of this wallet, under a lease key, or naming a refused
  --    record; the rest booked by the batch (which judges their shape and everything else).
  v_count := jsonb_array_length(p_bookings);
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
  if v_count = 0 or array_position(v_refusals, null) is null then
    -- None is sent (every one refused here, or there are none).
    v_sent := '[]'::jsonb;
    v_sent_positions := '{}';
  elsif array_positions(v_refusals, null) = array(select generate_series(1, v_count)) then
    -- None refused here (the usual flush): the bookings as given.
    v_sent := p_bookings;
    v_sent_positions := array_positions(v_refusals, null);
  else
    select array_agg(e.ordinality::integer order by e.ordinality), jsonb_agg(e.value order by e.ordinality)
      into v_sent_positions, v_sent
      from jsonb_array_elements(p_bookings) with ordinality as e
     where v_refusals[e.ordinality::integer] is null;
  end if;
  -- Each element's row is answered as the batch gives it (the columns are this function's OUT
  -- variables; the lease's are null on it), at its position in p_bookings.
  lease_amount_usd := null;
  lease_expires_at := null;
  lease_status := null;
  wallet_balance_usd := null;
  available_usd := null;
  spend_limits := null;
  rate_limit := null;
  key_budgets := null;
  for v_index, ordinal, request_id, outcome, reason, message, usage_event_id, ledger_transaction_id, upstream_cost_usd,
      retail_usd, developer_revenue_usd, platform_share_usd, balance_usd, receivable_usd, created_at in
    select b.ordinal, v_sent_positions[b.ordinal], b.request_id, b.outcome, b.reason, b.message, b.usage_event_id,
           b.ledger_transaction_id, b.upstream_cost_usd, b.retail_usd, b.developer_revenue_usd, b.platform_share_usd,
           b.balance_usd, b.receivable_usd, b.created_at
      from faucet_book_usage_batch(v_sent) as b
  loop
    if outcome = 'booked' then
      v_booked := v_booked + retail_usd;
      if v_sent -> (v_index - 1) ->> 'call_id' is not null then
        v_booked_calls := v_booked_calls || (v_sent -> (v_index - 1) ->> 'call_id')::uuid;
      end if;
    end if;
    return next;
  end loop;
  -- The elements refused here.
  return query
  select e.ordinality::integer, e.value ->> 'request_id', 'refused'::text, 'invalid_request'::text,
         v_refusals[e.ordinality::integer], null::uuid, null::uuid, null::numeric, null::numeric, null::numeric, null::numeric,
         null::numeric, null::numeric, null::timestamptz, null::numeric, null::timestamptz, null::text, null::numeric,
         null::numeric, null::jsonb, null::jsonb, null::jsonb
    from jsonb_array_elements(p_bookings) with ordinality as e
   where v_refusals[e.ordinality::integer] is not null;

  -- The records written closed whose booking was not booked now are put back in flight (the sweeper
  -- books them), exactly as if written in flight and closed only by a booking.
  v_reopen := array(select unnest(v_closed_calls) except select unnest(v_booked_calls));
  if cardinality(v_reopen) > 0 then
    update gateway_calls g set status = 'in_flight', closed_at = null where g.id = any (v_reopen);
  end if;

  -- c. The lease, from the balance the bookings left.
  select w.balance into v_balance from wallets w where w.id = v_wallet_id;
  v_others := faucet_held(v_wallet_id, p_lease_key);
  -- The room the spend limits leave the lease (least ignores a limit not set).
  if v_limit_day is not null or v_limit_month is not null then
    select coalesce(sum(u.retail_usd) filter (where u.created_at >= date_trunc('day', now(), 'UTC')), 0),
           coalesce(sum(u.retail_usd), 0)
      into v_spent_day, v_spent_month
      from usage_events u
     where u.end_user_id = p_end_user_id
       and u.created_at >= case when v_limit_month is null then date_trunc('day', now(), 'UTC') else faucet_month_start(now()) end;
    select coalesce(sum(h.amount), 0) into v_in_flight
      from gateway_calls g join balance_holds h on h.request_id = g.money_key
     where g.end_user_id = p_end_user_id and g.status = 'in_flight';
    v_room := least(v_limit_day - v_spent_day - v_in_flight, v_limit_month - v_spent_month - v_in_flight);
    v_spend_limits := jsonb_strip_nulls(jsonb_build_object(
      'day', case when v_limit_day is not null then jsonb_build_object(
               'limit', v_limit_day::numeric(20, 8)::text,
               'room', greatest(v_limit_day - v_spent_day - v_in_flight, 0)::numeric(20, 8)::text) end,
      'month', case when v_limit_month is not null then jsonb_build_object(
                 'limit', v_limit_month::numeric(20, 8)::text,
                 'room', greatest(v_limit_month - v_spent_month - v_in_flight, 0)::numeric(20, 8)::text) end));
  end if;
  -- The call slots under a requests-per-minute limit: how many calls the object may hold that
  -- Postgres has no record of yet (faucet_authorize_call's step 3 counts them as in the window).
  -- Kept: never below the old slots less the records of the window written now (the object's calls
  -- authorized while this ran stay counted), else the slots asked for as far as the window leaves
  -- room; released: the slots asked for (the calls in flight, authorized already).
  if v_limit_rpm is not null then
    select count(*)::integer into v_window from gateway_calls g
     where g.end_user_id = p_end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds';
    v_slots := case when p_keep then greatest(v_old_slots - v_written, least(coalesce(p_call_slots, 0), v_limit_rpm - v_window), 0)
                    else greatest(coalesce(p_call_slots, 0), 0) end;
    -- The oldest calls of the window (at most the limit, as epoch ms): when the object refuses a call,
    -- it tells the seconds until one leaves it, with its own calls counted.
    v_rate_limit := jsonb_build_object('limit', v_limit_rpm, 'slots', v_slots, 'window', (
      select coalesce(jsonb_agg(w.at order by w.at), '[]'::jsonb)
        from (select (extract(epoch from g.created_at) * 1000)::bigint as at from gateway_calls g
               where g.end_user_id = p_end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds'
               order by g.created_at limit v_limit_rpm) w));
  end if;
  if p_keep then
    v_new := greatest(v_old - v_booked, least(p_target, v_balance - v_others, v_room), 0);
  else
    v_new := greatest(0, least(p_target, v_balance - v_others));
  end if;
  v_status := case when not p_keep and v_new = 0 then 'released' else 'active' end;
  if v_lease.id is null then
    insert into balance_holds (wallet_id, request_id, amount, status, expires_at, closed_at, call_slots)
    values (v_wallet_id, p_lease_key, v_new, v_status, now() + make_interval(secs => p_ttl_seconds),
            case when v_status = 'released' then now() end, v_slots)
    returning * into v_lease;
  else
    update balance_holds h
       set amount = v_new, status = v_status, expires_at = now() + make_interval(secs => p_ttl_seconds),
           closed_at = case when v_status = 'released' then now() end, call_slots = v_slots
     where h.id = v_lease.id
    returning * into v_lease;
  end if;

  -- d. The budget leases of the developer keys named, from what this flush booked.
  if p_budgets is not null then
    v_key_budgets := '{}'::jsonb;
    for v_key in
      select e.key::uuid as id, e.value::numeric as target, k.monthly_budget_usd as budget,
             (k.owner_type = 'developer' and k.developer_id = v_developer_id and k.status = 'active') as usable
        from jsonb_each_text(p_budgets) as e left join provider_credentials k on k.id = e.key::uuid
       order by e.key::uuid
    loop
      select r.amount, r.expires_at into v_reservation from provider_credential_reservations r
       where r.request_id = p_lease_key || ':' || v_key.id::text for update;
      v_key_old := case when found and v_reservation.expires_at > now() then v_reservation.amount else 0 end;
      -- Less the upstream cost this flush booked on the key (its budget lease reserved it).
      v_key_old := v_key_old - coalesce((select sum(u.upstream_cost_usd) from usage_events u
                                          where u.call_id = any (v_booked_calls) and u.provider_credential_id = v_key.id), 0);
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
  end if;

  -- available = balance − every active unexpired hold: the others (v_others) and the lease when active
  -- (its expiry is now() + a positive lifetime).
  return query
  select 0, p_lease_key, 'lease'::text, null::text, null::text, null::uuid, null::uuid, null::numeric, null::numeric,
         null::numeric, null::numeric, null::numeric, null::numeric, null::timestamptz,
         v_lease.amount::numeric(20, 8), v_lease.expires_at, v_lease.status, v_balance::numeric(20, 8),
         (v_balance - v_others - case when v_lease.status = 'active' and v_lease.expires_at > now() then v_lease.amount else 0 end)
           ::numeric(20, 8),
         v_spend_limits, v_rate_limit, v_key_budgets;
end
$$;
