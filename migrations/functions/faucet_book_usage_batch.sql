-- The current definition of faucet_book_usage_batch (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book many settled calls in one statement (the flush of a wallet object's settlements).
-- p_bookings is a JSON array; each element carries what faucet_book_usage takes, named as the
-- attributes of the type faucet_usage_booking (its parameters without `p_`; amounts as decimal
-- strings). The booking itself is faucet_book_usage_locked, the one faucet_book_usage makes too, so
-- a flushed call gets exactly the usage record, entries, hold settlement and call close of a
-- per-call booking, once per money key (request_id).
--
-- One row per element, `ordinal` = its 1-based position in p_bookings (rows come in booking order, not
-- by ordinal: read them by ordinal):
--   booked          this statement booked it;
--   already_booked  its money key was booked before (an earlier flush, a per-call booking, the
--                   sweeper, or an earlier element of this batch): the amounts are that booking's;
--   refused         nothing was written for it; `reason` is an error code of DESIGN §4:
--                   insufficient_balance (the wallet cannot cover it and no receivable is allowed),
--                   invalid_request (an unknown or missing field, a value of the wrong type,
--                   amounts that do not add up, a constraint of the tables), not_found (not the
--                   booking's own call; no such end user, app or credential), conflict (the money key
--                   or the call was booked for another end user or under another key).
--
-- Elements are grouped by end user, in (end user, money key) order, so concurrent flushes lock
-- wallets in one order and cannot deadlock on them. Each wallet is locked once, its elements booked
-- set-based in one call of faucet_book_usage_locked, and its row debited once.
-- Failure: a group is booked inside one savepoint; if a table constraint the checks did not foresee
-- refuses it (a 22xxx/23xxx SQLSTATE), that group is booked again element by element, each in its
-- own savepoint, so the one bad element is refused and the others booked. Any other error (a
-- fault, a deadlock, a cut connection, a cancelled statement) aborts the whole statement, which is
-- one transaction: nothing of the batch is written, and the retry books each call once.
-- At most 1000 elements per batch.
create or replace function faucet_book_usage_batch(p_bookings jsonb)
returns table (
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
  created_at timestamptz
)
language plpgsql as $$
#variable_conflict use_column
declare
  -- The fields of an element: the attributes of faucet_usage_booking (migrations 0019 and 0034; the one-hour
  -- cache-write fields of 0034 are optional, so a settlement kept from before books as it was).
  c_fields constant text[] := array(
    select a.attname::text from pg_attribute a
     where a.attrelid = 'faucet_usage_booking'::regclass and a.attnum > 0 and not a.attisdropped);
  c_required constant text[] := array[
    'request_id', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider', 'model', 'input_tokens',
    'output_tokens', 'cached_tokens', 'estimated', 'upstream_cost', 'upstream_payable', 'retail', 'developer_revenue',
    'platform_share', 'allow_receivable', 'cache_write_tokens', 'audio_input_tokens', 'audio_output_tokens',
    'reasoning_tokens'];
  v_count integer;
  v_refusals text[];
  v_cast_ok boolean := true;
  -- The elements to book, in (end user, money key, position) order: positions and values.
  v_order_positions integer[];
  v_order_bookings faucet_usage_booking[];
  v_first integer;
  v_last integer;
  v_end_user uuid;
  v_positions integer[];
  v_bookings faucet_usage_booking[];
  v_wallet_id uuid;
  v_balance numeric;
  v_debit numeric;
  v_index integer;
  v_offset integer;
  v_single boolean;
begin
  if jsonb_typeof(p_bookings) is distinct from 'array' then
    raise exception 'bookings must be a JSON array' using errcode = '22023';
  end if;
  v_count := jsonb_array_length(p_bookings);
  if v_count > 1000 then
    raise exception 'at most 1000 bookings per batch' using errcode = '22023';
  end if;
  -- The shape of each element: an object of known fields, the required ones not null (cheap set
  -- checks; the message is worked out only for an element that fails them).
  select array_agg(
           case
             when jsonb_typeof(e.value) is distinct from 'object' then 'a booking must be a JSON object'
             when (e.value - c_fields) <> '{}'::jsonb
               then (select 'unknown field ' || k from jsonb_object_keys(e.value - c_fields) as k order by k limit 1)
             when not (jsonb_strip_nulls(e.value) ?& c_required)
               then (select 'missing field ' || f from unnest(c_required) with ordinality as r(f, n)
                      where e.value ->> f is null order by n limit 1)
           end order by e.ordinality)
    into v_refusals
    from jsonb_array_elements(p_bookings) with ordinality as e;

  -- Every value of the right type: cast all at once, in the order they are booked in (one pass over
  -- the elements); only when a cast fails are the elements checked field by field, those refused, and
  -- the rest cast again (a failed cast must not abort the batch).
  loop
    begin
      select array_agg(e.ordinality::integer order by lower(e.value ->> 'end_user_id'), e.value ->> 'request_id', e.ordinality),
             array_agg(jsonb_populate_record(null::faucet_usage_booking, e.value)
                       order by lower(e.value ->> 'end_user_id'), e.value ->> 'request_id', e.ordinality)
        into v_order_positions, v_order_bookings
        from jsonb_array_elements(p_bookings) with ordinality as e
       where v_refusals[e.ordinality::integer] is null;
      exit;
    exception when data_exception then
      if not v_cast_ok then
        raise;
      end if;
      v_cast_ok := false;
      select array_agg(
               coalesce(v_refusals[e.ordinality::integer],
                        (select format('%s is not a valid %s', a.attname, format_type(a.atttypid, a.atttypmod))
                           from pg_attribute a
                          where a.attrelid = 'faucet_usage_booking'::regclass and a.attnum > 0 and not a.attisdropped
                            and e.value ->> a.attname is not null
                            and not pg_input_is_valid(e.value ->> a.attname, format_type(a.atttypid, a.atttypmod))
                          order by a.attnum limit 1))
               order by e.ordinality)
        into v_refusals
        from jsonb_array_elements(p_bookings) with ordinality as e;
    end;
  end loop;

  return query
  select e.ordinality::integer, e.value ->> 'request_id', 'refused'::text, 'invalid_request'::text, v_refusals[e.ordinality::integer],
         null::uuid, null::uuid, null::numeric, null::numeric, null::numeric, null::numeric, null::numeric, null::numeric,
         null::timestamptz
    from jsonb_array_elements(p_bookings) with ordinality as e
   where v_refusals[e.ordinality::integer] is not null;

  -- One group per end user: a run of equal end users in the booking order.
  v_first := 1;
  while v_first <= coalesce(cardinality(v_order_positions), 0) loop
    v_end_user := (v_order_bookings[v_first]).end_user_id;
    v_last := v_first;
    while v_last < cardinality(v_order_positions) and (v_order_bookings[v_last + 1]).end_user_id = v_end_user loop
      v_last := v_last + 1;
    end loop;
    v_positions := v_order_positions[v_first:v_last];
    v_bookings := v_order_bookings[v_first:v_last];
    v_first := v_last + 1;

    select w.id, w.balance into v_wallet_id, v_balance from wallets w where w.end_user_id = v_end_user for no key update;
    if not found then
      v_wallet_id := null;
      if exists (select 1 from end_users u where u.id = v_end_user) then
        v_wallet_id := faucet_user_wallet(v_end_user);
        select w.balance into v_balance from wallets w where w.id = v_wallet_id for no key update;
      end if;
    end if;
    if v_wallet_id is null then
      return query
      select g.element, (g.booking).request_id, 'refused'::text, 'not_found'::text, 'no such end user'::text, null::uuid,
             null::uuid, null::numeric, null::numeric, null::numeric, null::numeric, null::numeric, null::numeric,
             null::timestamptz
        from unnest(v_positions, v_bookings) as g(element, booking);
      continue;
    end if;

    -- First the whole group in one call; if a table constraint refuses it (rolled back whole, no row
    -- returned: a PL/pgSQL set is returned only once complete, so none of its rows was answered yet),
    -- each element alone, a savepoint each, to find the one the tables refuse. `v_offset`: where the
    -- call's elements start in the group.
    v_debit := 0;
    v_single := false;
    v_index := 0;
    loop
      v_offset := 0;
      if v_single then
        v_index := v_index + 1;
        exit when v_index > cardinality(v_positions);
        v_offset := v_index - 1;
      end if;
      begin
        -- Each row is answered as it comes (the columns are this function's OUT variables).
        for ordinal, request_id, outcome, reason, message, usage_event_id, ledger_transaction_id, upstream_cost_usd, retail_usd,
            developer_revenue_usd, platform_share_usd, balance_usd, receivable_usd, created_at in
          select v_positions[b.ordinal + v_offset], (v_bookings[b.ordinal + v_offset]).request_id,
                 case b.outcome when 'duplicate' then 'already_booked' else b.outcome end, b.reason, b.message,
                 b.usage_event_id, b.ledger_transaction_id, b.upstream_cost_usd::numeric(20, 8), b.retail_usd::numeric(20, 8),
                 b.developer_revenue_usd::numeric(20, 8), b.platform_share_usd::numeric(20, 8), b.balance_usd::numeric(20, 8),
                 b.receivable_usd::numeric(20, 8), b.created_at
            from faucet_book_usage_locked(v_wallet_id, v_balance - v_debit,
                                          case when v_single then array[v_bookings[v_index]] else v_bookings end) as b
        loop
          if outcome = 'booked' then
            v_debit := v_debit + retail_usd;
          end if;
          return next;
        end loop;
      exception when data_exception or integrity_constraint_violation then
        if not v_single then
          v_single := true;
          continue;
        end if;
        return query
        select v_positions[v_index], (v_bookings[v_index]).request_id, 'refused'::text,
               case when sqlstate = '23505' then 'conflict' when sqlstate = '23503' then 'not_found' else 'invalid_request' end,
               sqlerrm, null::uuid, null::uuid, null::numeric, null::numeric, null::numeric, null::numeric, null::numeric,
               null::numeric, null::timestamptz;
      end;
      exit when not v_single;
    end loop;
    if v_debit <> 0 then
      update wallets set balance = balance - v_debit where id = v_wallet_id;
    end if;
  end loop;
end
$$;
