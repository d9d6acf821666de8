-- The current definition of faucet_settle_lease (migrations/README.md: edit it here; the runner re-applies a changed file).
-- One statement of a wallet object (docs/edge.md): book a flush of the calls it authorized against its
-- lease, and set the lease — a hold on the end user's wallet keyed by p_lease_key ('lease:<object
-- name>'; another prefix is refused, so a lease never shares a key with a call, a payout or a top-up).
-- It takes the locks, in the global order — the end user's row (under a spend or requests-per-minute
-- limit), the developer keys of p_budgets (in id order), the wallet (`for no key update`, as every
-- hold and booking takes it), then the lease's hold row — and runs each job in turn:
--   a. faucet_lease_write_records: the call records (p_calls, gateway_calls columns) absent by id;
--   b. with the lease's amount set to 0 (inside this transaction: the lease reserved this money, so
--      it does not count against them), faucet_lease_book_usage: the elements (p_bookings, as
--      faucet_book_usage_batch takes them), each booked or refused on its own;
--   c. faucet_lease_spend_room and faucet_lease_call_slots: what the app's per-end-user spend limits
--      and requests-per-minute limit leave the lease (p_call_slots: the calls the object wants to be
--      able to hold unflushed), then faucet_lease_set_hold: the lease, from what the bookings left
--      (p_target, p_keep, p_ttl_seconds);
--   d. faucet_lease_set_budgets: each developer key's budget lease (p_budgets: {key id: target}).
-- Answers one row: lease (faucet_lease_state: the hold after, the wallet's balance and what is
-- available, spend_limits, rate_limit and key_budgets as each job answers them) and results (a JSON
-- array in p_bookings order, one object per element with faucet_book_usage_batch's columns). A pure
-- renewal answers results [].
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
  p_budgets jsonb default null,
  out lease faucet_lease_state,
  out results jsonb
)
language plpgsql
-- Every statement under it keeps one generic plan (faucet_lease_write_records says why).
set plan_cache_mode = force_generic_plan
as $$
declare
  v_app_id uuid;
  v_developer_id uuid;
  v_limit_day numeric;
  v_limit_month numeric;
  v_limit_rpm integer;
  v_wallet_id uuid;
  v_lease balance_holds%rowtype;
  v_old numeric := 0;
  v_old_slots integer := 0;
  v_records record;
  v_booked record;
  v_spend record;
  v_slots record;
  v_hold record;
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
  -- The locks, in the global order: two statements never wait on each other in a cycle.
  if v_limit_day is not null or v_limit_month is not null or v_limit_rpm is not null then
    perform 1 from end_users u where u.id = p_end_user_id for no key update;
  end if;
  if p_budgets is not null then
    perform 1 from provider_credentials k
     where k.id in (select e.key::uuid from jsonb_object_keys(p_budgets) as e(key))
     order by k.id
       for no key update;
  end if;
  -- The wallet: every hold, booking and settle of it waits here.
  select w.id into v_wallet_id from wallets w where w.end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    perform 1 from wallets w where w.id = v_wallet_id for no key update;
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
    -- The lease reserved the money of the bookings: it does not count against them.
    update balance_holds h set amount = 0 where h.id = v_lease.id;
  end if;

  -- a.
  select * into v_records from faucet_lease_write_records(p_end_user_id, v_app_id, v_developer_id, p_calls, p_bookings);
  -- b.
  select * into v_booked
    from faucet_lease_book_usage(p_end_user_id, p_bookings, v_records.refused_calls, v_records.closed_calls);
  -- c.
  select * into v_spend from faucet_lease_spend_room(p_end_user_id, v_limit_day, v_limit_month);
  select * into v_slots
    from faucet_lease_call_slots(p_end_user_id, v_limit_rpm, p_keep, v_old_slots, v_records.written_in_window, p_call_slots);
  select * into v_hold
    from faucet_lease_set_hold(v_wallet_id, p_lease_key, v_lease.id, v_old, v_booked.booked_retail_usd, v_spend.room,
                               v_slots.slots, p_target, p_keep, p_ttl_seconds);

  -- d.
  v_key_budgets := faucet_lease_set_budgets(p_lease_key, v_developer_id, p_budgets, v_booked.booked_call_ids, p_keep, p_ttl_seconds);

  lease := row(v_hold.amount_usd, v_hold.expires_at, v_hold.status, v_hold.wallet_balance_usd, v_hold.available_usd,
               v_spend.spend_limits, v_slots.rate_limit, v_key_budgets)::faucet_lease_state;
  results := v_booked.results;
end
$$;
