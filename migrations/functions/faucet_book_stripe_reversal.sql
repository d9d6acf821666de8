-- The current definition of faucet_book_stripe_reversal (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A Stripe charge refund, dispute or dispute outcome against a credited checkout session.
-- p_action: 'refund' (p_amount_cents is the charge's cumulative amount_refunded; the increase over
-- the last booked total is debited), 'dispute' (p_amount_cents disputed: debited once per dispute),
-- 'dispute_won' (the dispute's booked amount is credited back once).
-- outcome: 'booked' | 'duplicate_event' | 'nothing_to_book' (no increase, already booked or a
-- dispute that was never booked) | 'unknown_charge' (no credited session has this payment intent:
-- event and an audit row recorded, no money moves) | 'amount_mismatch' (more than the session paid,
-- or not USD: audited, nothing booked).
-- The wallet debit is a receivable debit (may go below zero); spent_usd is the part already spent.
-- Bounded by what the checkout credited: refunds and disputes of its charges together (less disputes
-- won) never debit more than its amount (checkout_sessions.reversed_cents); the part over it is not
-- booked and is audited as stripe.reversal_capped.
create or replace function faucet_book_stripe_reversal(
  p_event_id text,
  p_event_type text,
  p_action text,
  p_payment_intent_id text,
  p_charge_id text,
  p_dispute_id text,
  p_amount_cents bigint,
  p_currency text,
  p_request_id text
) returns table (outcome text, wallet_id uuid, ledger_transaction_id uuid, amount_usd numeric, spent_usd numeric)
language plpgsql as $$
#variable_conflict use_column
declare
  v_session checkout_sessions%rowtype;
  v_charge stripe_charges%rowtype;
  v_dispute stripe_disputes%rowtype;
  v_cents bigint;
  v_asked bigint;
  v_amount numeric(20, 8);
  v_posted record;
  v_kind text;
  v_key text;
begin
  if p_action not in ('refund', 'dispute', 'dispute_won') then
    raise exception 'unknown reversal action %', p_action using errcode = '22023';
  end if;
  if p_payment_intent_id is not null then
    select * into v_session from checkout_sessions c
    where c.stripe_payment_intent_id = p_payment_intent_id and c.status = 'completed' for update;
  end if;
  if v_session.id is null and p_charge_id is not null then
    select c.* into v_session from checkout_sessions c join stripe_charges s on s.checkout_session_id = c.id
    where s.charge_id = p_charge_id for update of c;
  end if;

  insert into processed_webhook_events (event_id, type) values (p_event_id, p_event_type)
  on conflict (event_id) do nothing;
  if not found then
    -- A redelivery: name the booking this event made, so the caller can finish its clawback.
    return query select 'duplicate_event'::text, v_session.wallet_id, t.id, null::numeric, (t.metadata ->> 'spent_usd')::numeric
      from (select null) as one
      left join ledger_transactions t on t.kind in ('refund', 'chargeback') and t.metadata ->> 'stripe_event_id' = p_event_id;
    return;
  end if;

  if v_session.id is null then
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('system', 'stripe', 'stripe.unknown_charge', 'stripe_charge', coalesce(p_charge_id, p_payment_intent_id, p_event_id),
            p_request_id, jsonb_build_object('event_id', p_event_id, 'event_type', p_event_type, 'payment_intent', p_payment_intent_id,
                                             'charge', p_charge_id, 'dispute', p_dispute_id, 'amount_cents', p_amount_cents));
    return query select 'unknown_charge'::text, null::uuid, null::uuid, null::numeric, null::numeric;
    return;
  end if;

  if p_charge_id is not null then
    insert into stripe_charges (charge_id, payment_intent_id, checkout_session_id)
    values (p_charge_id, coalesce(p_payment_intent_id, v_session.stripe_payment_intent_id), v_session.id)
    on conflict (charge_id) do nothing;
  end if;

  if p_action = 'dispute_won' then
    select * into v_dispute from stripe_disputes d where d.dispute_id = p_dispute_id for update;
    if not found or v_dispute.status <> 'open' or v_dispute.ledger_transaction_id is null then
      return query select 'nothing_to_book'::text, v_session.wallet_id, null::uuid, null::numeric, null::numeric;
      return;
    end if;
    v_amount := (v_dispute.amount_cents::numeric / 100)::numeric(20, 8);
    -- Every wallet this path touches (its clawback's too), locked up front in the global order.
    perform 1 from wallets w
    where w.id = v_session.wallet_id or w.id = faucet_system_wallet('payment_clearing')
       or w.id = faucet_system_wallet('platform_adjustments')
       or w.id in (select c.developer_wallet_id from revenue_clawbacks c
                   where c.source_transaction_id = v_dispute.ledger_transaction_id and c.status = 'booked')
    order by faucet_wallet_rank(w.kind), w.id
    for no key update;
    select * into v_posted from faucet_post_transaction(
      'chargeback_reversal', 'stripe_dispute_won:' || p_dispute_id, p_request_id, 'stripe dispute won',
      jsonb_build_object('stripe_dispute_id', p_dispute_id, 'stripe_event_id', p_event_id, 'checkout_session_id', v_session.id,
                         'chargeback_transaction_id', v_dispute.ledger_transaction_id),
      array[v_session.wallet_id, faucet_system_wallet('payment_clearing')],
      array[v_amount, -v_amount]);
    update stripe_disputes d set status = 'won', closed_at = now(), reversal_transaction_id = v_posted.transaction_id
    where d.dispute_id = p_dispute_id;
    update checkout_sessions c set reversed_cents = c.reversed_cents - v_dispute.amount_cents where c.id = v_session.id;
    -- The clawback taken from the developer for this chargeback goes back too.
    perform faucet_reverse_clawback(c.id, 'stripe dispute won', 'system', p_request_id)
    from revenue_clawbacks c where c.source_transaction_id = v_dispute.ledger_transaction_id and c.status = 'booked';
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('system', 'stripe', 'stripe.dispute_won', 'checkout_session', v_session.id::text, p_request_id,
            jsonb_build_object('event_id', p_event_id, 'dispute', p_dispute_id, 'transaction_id', v_posted.transaction_id));
    return query select 'booked'::text, v_session.wallet_id, v_posted.transaction_id, v_amount, 0::numeric;
    return;
  end if;

  if lower(coalesce(p_currency, '')) <> 'usd' or p_amount_cents is null or p_amount_cents < 0
     or p_amount_cents > v_session.amount_cents then
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('system', 'stripe', 'stripe.reversal_amount_mismatch', 'checkout_session', v_session.id::text, p_request_id,
            jsonb_build_object('event_id', p_event_id, 'event_type', p_event_type, 'amount_cents', p_amount_cents,
                               'currency', p_currency, 'session_amount_cents', v_session.amount_cents));
    return query select 'amount_mismatch'::text, v_session.wallet_id, null::uuid, null::numeric, null::numeric;
    return;
  end if;

  if p_action = 'refund' then
    if p_charge_id is null then
      raise exception 'a refund names its charge' using errcode = '22023';
    end if;
    select * into v_charge from stripe_charges s where s.charge_id = p_charge_id for update;
    v_cents := p_amount_cents - v_charge.refunded_cents;
    if v_cents <= 0 then
      return query select 'nothing_to_book'::text, v_session.wallet_id, null::uuid, null::numeric, null::numeric;
      return;
    end if;
    update stripe_charges s set refunded_cents = p_amount_cents, updated_at = now() where s.charge_id = p_charge_id;
    v_kind := 'refund';
    v_key := 'stripe_refund:' || p_charge_id || ':' || p_amount_cents;
  else
    insert into stripe_disputes (dispute_id, charge_id, checkout_session_id, amount_cents)
    values (p_dispute_id, coalesce(p_charge_id, ''), v_session.id, p_amount_cents)
    on conflict (dispute_id) do nothing;
    if not found then
      return query select 'nothing_to_book'::text, v_session.wallet_id, null::uuid, null::numeric, null::numeric;
      return;
    end if;
    v_cents := p_amount_cents;
    v_kind := 'chargeback';
    v_key := 'stripe_dispute:' || p_dispute_id;
  end if;

  v_asked := v_cents;
  v_cents := least(v_cents, v_session.amount_cents - v_session.reversed_cents);
  if v_cents < v_asked then
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('system', 'stripe', 'stripe.reversal_capped', 'checkout_session', v_session.id::text, p_request_id,
            jsonb_build_object('event_id', p_event_id, 'event_type', p_event_type, 'asked_cents', v_asked,
                               'booked_cents', greatest(v_cents, 0), 'session_amount_cents', v_session.amount_cents,
                               'reversed_cents', v_session.reversed_cents));
  end if;
  if v_cents <= 0 then
    return query select 'nothing_to_book'::text, v_session.wallet_id, null::uuid, null::numeric, null::numeric;
    return;
  end if;
  -- A dispute records what was debited for it: a won dispute credits back exactly that.
  update stripe_disputes d set amount_cents = v_cents where p_action = 'dispute' and d.dispute_id = p_dispute_id;
  update checkout_sessions c set reversed_cents = c.reversed_cents + v_cents where c.id = v_session.id;

  v_amount := (v_cents::numeric / 100)::numeric(20, 8);
  select * into v_posted from faucet_post_receivable_debit(
    v_kind, v_key, p_request_id, 'stripe ' || p_event_type,
    jsonb_build_object('stripe_event_id', p_event_id, 'stripe_charge_id', p_charge_id, 'stripe_dispute_id', p_dispute_id,
                       'checkout_session_id', v_session.id, 'amount_cents', v_cents),
    v_session.wallet_id, faucet_system_wallet('payment_clearing'), v_amount);
  if p_action = 'dispute' then
    update stripe_disputes d set ledger_transaction_id = v_posted.transaction_id where d.dispute_id = p_dispute_id;
  end if;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('system', 'stripe', 'stripe.' || v_kind, 'checkout_session', v_session.id::text, p_request_id,
          jsonb_build_object('event_id', p_event_id, 'transaction_id', v_posted.transaction_id, 'amount_usd', v_amount,
                             'charge', p_charge_id, 'dispute', p_dispute_id));
  return query select 'booked'::text, v_session.wallet_id, v_posted.transaction_id, v_amount,
    (v_posted.metadata ->> 'spent_usd')::numeric;
end
$$;
