-- The current definition of faucet_book_usage_batch (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book many settled calls in one statement (issue 19: the flush of a wallet object's settlements).
-- p_bookings is a JSON array; each element carries what faucet_book_usage takes, named as the
-- attributes of the type faucet_usage_booking (its parameters without `p_`; amounts as decimal
-- strings). The booking itself is faucet_book_usage_locked, the one faucet_book_usage makes too, so
-- a flushed call gets exactly the usage record, entries, hold settlement and call close of a
-- per-call booking, once per money key (request_id).
--
-- One row per element, `ordinal` = its 1-based position in p_bookings:
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
  -- The fields of an element: the attributes of faucet_usage_booking (migration 0019).
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
  v_results jsonb[];
  v_group record;
  v_wallet_id uuid;
  v_balance numeric;
  v_debit numeric;
  v_row record;
  v_position integer;
  v_reason text;
begin
  if jsonb_typeof(p_bookings) is distinct from 'array' then
    raise exception 'bookings must be a JSON array' using errcode = '22023';
  end if;
  v_count := jsonb_array_length(p_bookings);
  if v_count > 1000 then
    raise exception 'at most 1000 bookings per batch' using errcode = '22023';
  end if;
  v_results := array_fill(null::jsonb, array[v_count]);

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

  -- Every value of the right type: cast all at once; only when a cast fails, find the elements
  -- (a failed cast must not abort the batch).
  begin
    perform jsonb_populate_record(null::faucet_usage_booking, e.value)
       from jsonb_array_elements(p_bookings) with ordinality as e
      where v_refusals[e.ordinality::integer] is null;
  exception when data_exception then
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

  for v_position in 1 .. v_count loop
    if v_refusals[v_position] is not null then
      v_results[v_position] := jsonb_build_object('outcome', 'refused', 'reason', 'invalid_request', 'message', v_refusals[v_position]);
    end if;
  end loop;

  for v_group in
    select lower(e.value ->> 'end_user_id') as end_user,
           array_agg(e.ordinality::integer order by e.value ->> 'request_id', e.ordinality) as positions,
           array_agg(jsonb_populate_record(null::faucet_usage_booking, e.value) order by e.value ->> 'request_id', e.ordinality)
             as bookings
      from jsonb_array_elements(p_bookings) with ordinality as e
     where v_refusals[e.ordinality::integer] is null
     group by lower(e.value ->> 'end_user_id')
     order by lower(e.value ->> 'end_user_id')
  loop
    select w.id, w.balance into v_wallet_id, v_balance from wallets w where w.end_user_id = v_group.end_user::uuid for no key update;
    if not found then
      v_wallet_id := null;
      if exists (select 1 from end_users u where u.id = v_group.end_user::uuid) then
        v_wallet_id := faucet_user_wallet(v_group.end_user::uuid);
        select w.balance into v_balance from wallets w where w.id = v_wallet_id for no key update;
      end if;
    end if;
    if v_wallet_id is null then
      foreach v_position in array v_group.positions loop
        v_results[v_position] := jsonb_build_object('outcome', 'refused', 'reason', 'not_found', 'message', 'no such end user');
      end loop;
      continue;
    end if;

    v_debit := 0;
    begin
      for v_row in select * from faucet_book_usage_locked(v_wallet_id, v_balance, v_group.bookings) loop
        v_results[v_group.positions[v_row.ordinal]] := to_jsonb(v_row);
        if v_row.outcome = 'booked' then
          v_debit := v_debit + v_row.retail_usd;
        end if;
      end loop;
    exception when data_exception or integrity_constraint_violation then
      -- Rolled back whole: find the element the tables refuse, one savepoint each.
      v_debit := 0;
      for v_position in 1 .. cardinality(v_group.positions) loop
        begin
          select * into v_row from faucet_book_usage_locked(v_wallet_id, v_balance - v_debit, array[v_group.bookings[v_position]]);
          v_results[v_group.positions[v_position]] := to_jsonb(v_row);
          if v_row.outcome = 'booked' then
            v_debit := v_debit + v_row.retail_usd;
          end if;
        exception when data_exception or integrity_constraint_violation then
          v_reason := case
            when sqlstate = '23505' then 'conflict'
            when sqlstate = '23503' then 'not_found'
            else 'invalid_request'
          end;
          v_results[v_group.positions[v_position]] := jsonb_build_object('outcome', 'refused', 'reason', v_reason, 'message', sqlerrm);
        end;
      end loop;
    end;
    if v_debit <> 0 then
      update wallets set balance = balance - v_debit where id = v_wallet_id;
    end if;
  end loop;

  return query
  select e.ordinality::integer, e.value ->> 'request_id',
         case r.value ->> 'outcome' when 'duplicate' then 'already_booked' else r.value ->> 'outcome' end,
         r.value ->> 'reason', r.value ->> 'message', (r.value ->> 'usage_event_id')::uuid,
         (r.value ->> 'ledger_transaction_id')::uuid, (r.value ->> 'upstream_cost_usd')::numeric(20, 8),
         (r.value ->> 'retail_usd')::numeric(20, 8), (r.value ->> 'developer_revenue_usd')::numeric(20, 8),
         (r.value ->> 'platform_share_usd')::numeric(20, 8), (r.value ->> 'balance_usd')::numeric(20, 8),
         (r.value ->> 'receivable_usd')::numeric(20, 8), (r.value ->> 'created_at')::timestamptz
    from jsonb_array_elements(p_bookings) with ordinality as e
    join unnest(v_results) with ordinality as r(value, n) on r.n = e.ordinality
   order by e.ordinality;
end
$$;
