-- The current definition of faucet_book_usage_batch (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book many settled calls in one statement (issue 19: the flush of a wallet object's settlements).
-- p_bookings is a JSON array; each element carries what faucet_book_usage takes, named as its
-- parameters without `p_` (amounts as decimal strings), and is booked by faucet_book_usage itself,
-- so a flushed call gets exactly the usage record, entries, hold settlement and call close a
-- per-call booking gets, once per money key (request_id).
--
-- One row per element, `ordinal` = its 1-based position in p_bookings:
--   booked          this statement booked it;
--   already_booked  its money key was booked before (an earlier flush, a per-call booking, the
--                   sweeper, or an earlier element of this batch): the amounts are that booking's;
--   refused         nothing was written for it; `reason` is an error code of DESIGN §4:
--                   insufficient_balance (the wallet cannot cover it and no receivable is allowed),
--                   invalid_request (a malformed element: unknown or missing field, bad value,
--                   amounts that do not add up), not_found (no such call for this money key and end
--                   user, unknown app, end user or credential), conflict (the money key or call was
--                   booked for another end user or under another key).
--
-- Failure: each element runs in its own savepoint (a PL/pgSQL exception block), so an element the
-- database refuses (the SQLSTATEs above) is rolled back alone and the others are booked. Any other
-- error (a fault, a deadlock, a cut connection, a cancelled statement) aborts the whole statement,
-- which is one transaction: nothing of the batch is written, and the retry books each call once.
-- Elements are booked in (end user, money key) order, so concurrent flushes lock wallets in one
-- order and cannot deadlock on them. At most 1000 elements per batch.
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
#variable_conflict use_variable
declare
  c_fields constant text[] := array[
    'request_id', 'client_request_id', 'call_id', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider',
    'model', 'input_tokens', 'output_tokens', 'cached_tokens', 'estimated', 'upstream_cost', 'upstream_payable', 'retail',
    'developer_revenue', 'platform_share', 'provider_credential_id', 'metadata', 'allow_receivable',
    'price_catalog_version', 'cache_write_tokens', 'audio_input_tokens', 'audio_output_tokens', 'reasoning_tokens',
    'input_price', 'cached_input_price', 'cache_write_price', 'audio_input_price', 'output_price', 'reasoning_price',
    'audio_output_price'];
  c_required constant text[] := array[
    'request_id', 'app_id', 'end_user_id', 'feature_key', 'route_mode', 'provider', 'model', 'input_tokens',
    'output_tokens', 'cached_tokens', 'estimated', 'upstream_cost', 'upstream_payable', 'retail', 'developer_revenue',
    'platform_share', 'allow_receivable', 'cache_write_tokens', 'audio_input_tokens', 'audio_output_tokens',
    'reasoning_tokens'];
  v_element record;
  v_booking jsonb;
  v_key text;
  v_booked text;
  v_event_id uuid;
  v_transaction_id uuid;
  v_upstream_cost numeric;
  v_retail numeric;
  v_developer_revenue numeric;
  v_platform_share numeric;
  v_balance numeric;
  v_receivable numeric;
  v_created_at timestamptz;
  v_outcome text;
  v_reason text;
  v_message text;
begin
  if jsonb_typeof(p_bookings) is distinct from 'array' then
    raise exception 'bookings must be a JSON array' using errcode = '22023';
  end if;
  if jsonb_array_length(p_bookings) > 1000 then
    raise exception 'at most 1000 bookings per batch' using errcode = '22023';
  end if;

  for v_element in
    select e.value as booking, e.ordinality::integer as position
    from jsonb_array_elements(p_bookings) with ordinality as e
    order by e.value ->> 'end_user_id', e.value ->> 'request_id', e.ordinality
  loop
    v_booking := v_element.booking;
    v_booked := null;
    v_retail := null;
    v_balance := null;
    v_reason := null;
    v_message := null;
    if jsonb_typeof(v_booking) is distinct from 'object' then
      v_reason := 'invalid_request';
      v_message := 'a booking must be a JSON object';
      v_booking := '{}'::jsonb;
    else
      select k into v_key from jsonb_object_keys(v_booking) k where k <> all (c_fields) limit 1;
      if found then
        v_reason := 'invalid_request';
        v_message := format('unknown field %s', v_key);
      else
        select f into v_key from unnest(c_required) f where v_booking ->> f is null limit 1;
        if found then
          v_reason := 'invalid_request';
          v_message := format('missing field %s', v_key);
        end if;
      end if;
    end if;

    if v_reason is null then
      begin
        select b.outcome, b.usage_event_id, b.ledger_transaction_id, b.upstream_cost_usd, b.retail_usd,
               b.developer_revenue_usd, b.platform_share_usd, b.balance_usd, b.receivable_usd, b.created_at
          into v_booked, v_event_id, v_transaction_id, v_upstream_cost, v_retail, v_developer_revenue, v_platform_share,
               v_balance, v_receivable, v_created_at
          from faucet_book_usage(
          v_booking ->> 'request_id', v_booking ->> 'client_request_id', (v_booking ->> 'call_id')::uuid,
          (v_booking ->> 'app_id')::uuid, (v_booking ->> 'end_user_id')::uuid, v_booking ->> 'feature_key',
          v_booking ->> 'route_mode', v_booking ->> 'provider', v_booking ->> 'model',
          (v_booking ->> 'input_tokens')::integer, (v_booking ->> 'output_tokens')::integer,
          (v_booking ->> 'cached_tokens')::integer, (v_booking ->> 'estimated')::boolean,
          (v_booking ->> 'upstream_cost')::numeric, (v_booking ->> 'upstream_payable')::numeric,
          (v_booking ->> 'retail')::numeric, (v_booking ->> 'developer_revenue')::numeric,
          (v_booking ->> 'platform_share')::numeric, (v_booking ->> 'provider_credential_id')::uuid,
          nullif(v_booking -> 'metadata', 'null'::jsonb), (v_booking ->> 'allow_receivable')::boolean, v_booking ->> 'price_catalog_version',
          (v_booking ->> 'cache_write_tokens')::integer, (v_booking ->> 'audio_input_tokens')::integer,
          (v_booking ->> 'audio_output_tokens')::integer, (v_booking ->> 'reasoning_tokens')::integer,
          (v_booking ->> 'input_price')::numeric, (v_booking ->> 'cached_input_price')::numeric,
          (v_booking ->> 'cache_write_price')::numeric, (v_booking ->> 'audio_input_price')::numeric,
          (v_booking ->> 'output_price')::numeric, (v_booking ->> 'reasoning_price')::numeric,
          (v_booking ->> 'audio_output_price')::numeric) b;
      exception
        when data_exception or not_null_violation or check_violation then
          v_reason := 'invalid_request';
          v_message := sqlerrm;
        when no_data_found or foreign_key_violation then
          v_reason := 'not_found';
          v_message := sqlerrm;
        when unique_violation then
          v_reason := 'conflict';
          v_message := sqlerrm;
      end;
    end if;

    if v_reason is not null then
      v_outcome := 'refused';
    elsif v_booked = 'insufficient_balance' then
      v_outcome := 'refused';
      v_reason := 'insufficient_balance';
      v_message := 'the wallet cannot cover this booking';
    elsif v_booked = 'duplicate' then
      v_outcome := 'already_booked';
    else
      v_outcome := 'booked';
    end if;

    ordinal := v_element.position;
    request_id := v_booking ->> 'request_id';
    outcome := v_outcome;
    reason := v_reason;
    message := v_message;
    usage_event_id := case when v_reason is null then v_event_id end;
    ledger_transaction_id := case when v_reason is null then v_transaction_id end;
    upstream_cost_usd := case when v_reason is null then v_upstream_cost end;
    retail_usd := v_retail;
    developer_revenue_usd := case when v_reason is null then v_developer_revenue end;
    platform_share_usd := case when v_reason is null then v_platform_share end;
    balance_usd := v_balance;
    receivable_usd := case when v_reason is null then v_receivable end;
    created_at := case when v_reason is null then v_created_at end;
    return next;
  end loop;
end
$$;
