-- The current definition of faucet_lease_book_usage (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's flush, second part (faucet_settle_lease calls it with the wallet locked and the
-- lease's amount set to 0, so the lease's money does not count against the bookings): the elements of
-- p_bookings (as faucet_book_usage_batch takes them) are booked by faucet_book_usage_batch, with its
-- outcomes per element (booked / already_booked / refused + reason). Refused here, never sent
-- (invalid_request): an element of another end user, one under a lease key, one naming a call whose
-- record was refused (p_refused_calls, as faucet_lease_write_records answers it; the message says why).
-- A duplicate books nothing and reduces nothing. A record written closed (p_closed_calls) whose
-- booking is not booked now is put back in flight (the sweeper books it), exactly as if written in
-- flight and closed only by its booking.
-- Answers results (a JSON array in p_bookings order, one object per element with the batch's columns:
-- ordinal = its 1-based position in p_bookings; amounts as decimal strings), booked_retail_usd (the
-- retail booked now) and booked_call_ids (the calls booked now).
create or replace function faucet_lease_book_usage(
  p_end_user_id uuid,
  p_bookings jsonb,
  p_refused_calls jsonb,
  p_closed_calls uuid[],
  out results jsonb,
  out booked_retail_usd numeric,
  out booked_call_ids uuid[]
)
language plpgsql as $$
declare
  v_count integer;
  v_refusals text[];
  v_sent jsonb;
  v_sent_positions integer[];
  v_reopen uuid[];
begin
  v_count := jsonb_array_length(p_bookings);
  -- Why each element is refused here (null: sent to the batch, which judges its shape and everything else).
  select array_agg(
           case
             when jsonb_typeof(e.value) is distinct from 'object' then null
             when e.value ->> 'end_user_id' is not null and lower(e.value ->> 'end_user_id') <> p_end_user_id::text
               then 'the booking is not of this wallet''s end user'
             when e.value ->> 'request_id' like 'lease:%' then 'a booking cannot use a lease key'
             when e.value ->> 'call_id' is not null then p_refused_calls ->> lower(e.value ->> 'call_id')
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

  with booked as (
    -- Each element as the batch answers it, at its position in p_bookings.
    select v_sent_positions[b.ordinal] as position, b.request_id, b.outcome, b.reason, b.message, b.usage_event_id,
           b.ledger_transaction_id, b.upstream_cost_usd, b.retail_usd, b.developer_revenue_usd, b.platform_share_usd,
           b.balance_usd, b.receivable_usd, b.created_at,
           case when b.outcome = 'booked' then (v_sent -> (b.ordinal - 1) ->> 'call_id')::uuid end as booked_call_id
      from faucet_book_usage_batch(v_sent) as b
  ), answers as (
    select k.position, k.outcome, k.retail_usd, k.booked_call_id,
           jsonb_build_object(
             'ordinal', k.position, 'request_id', k.request_id, 'outcome', k.outcome, 'reason', k.reason, 'message', k.message,
             'usage_event_id', k.usage_event_id, 'ledger_transaction_id', k.ledger_transaction_id,
             'upstream_cost_usd', k.upstream_cost_usd::text, 'retail_usd', k.retail_usd::text,
             'developer_revenue_usd', k.developer_revenue_usd::text, 'platform_share_usd', k.platform_share_usd::text,
             'balance_usd', k.balance_usd::text, 'receivable_usd', k.receivable_usd::text, 'created_at', k.created_at) as answer
      from booked k
    union all
    -- The elements refused here.
    select e.ordinality::integer, 'refused', null, null,
           jsonb_build_object(
             'ordinal', e.ordinality, 'request_id', e.value ->> 'request_id', 'outcome', 'refused', 'reason', 'invalid_request',
             'message', v_refusals[e.ordinality::integer], 'usage_event_id', null, 'ledger_transaction_id', null,
             'upstream_cost_usd', null, 'retail_usd', null, 'developer_revenue_usd', null, 'platform_share_usd', null,
             'balance_usd', null, 'receivable_usd', null, 'created_at', null)
      from jsonb_array_elements(p_bookings) with ordinality as e
     where v_refusals[e.ordinality::integer] is not null
  )
  select coalesce(jsonb_agg(a.answer order by a.position), '[]'::jsonb),
         coalesce(sum(a.retail_usd) filter (where a.outcome = 'booked'), 0),
         coalesce(array_agg(a.booked_call_id) filter (where a.booked_call_id is not null), '{}')
    into results, booked_retail_usd, booked_call_ids
    from answers a;

  v_reopen := array(select unnest(p_closed_calls) except select unnest(booked_call_ids));
  if cardinality(v_reopen) > 0 then
    update gateway_calls g set status = 'in_flight', closed_at = null where g.id = any (v_reopen);
  end if;
end
$$;
