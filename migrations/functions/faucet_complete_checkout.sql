-- The current definition of faucet_complete_checkout (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_complete_checkout(
  p_event_id text,
  p_event_type text,
  p_stripe_session_id text,
  p_amount_cents bigint,
  p_currency text,
  p_request_id text,
  p_payment_intent_id text
) returns table (outcome text, checkout_session_id uuid, wallet_id uuid, amount_cents integer, ledger_transaction_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_session checkout_sessions%rowtype;
  v_amount numeric(20, 8);
  v_posted record;
begin
  select * into v_session from checkout_sessions c where c.stripe_session_id = p_stripe_session_id for update;
  if not found then
    return query select 'unknown_session'::text, null::uuid, null::uuid, null::integer, null::uuid;
    return;
  end if;

  if p_payment_intent_id is not null and v_session.stripe_payment_intent_id is null then
    update checkout_sessions c set stripe_payment_intent_id = p_payment_intent_id where c.id = v_session.id;
  end if;

  insert into processed_webhook_events (event_id, type) values (p_event_id, p_event_type)
  on conflict (event_id) do nothing;
  if not found then
    return query select 'duplicate_event'::text, v_session.id, v_session.wallet_id, v_session.amount_cents,
      v_session.ledger_transaction_id;
    return;
  end if;

  if v_session.status <> 'pending' then
    return query select 'already_completed'::text, v_session.id, v_session.wallet_id, v_session.amount_cents,
      v_session.ledger_transaction_id;
    return;
  end if;

  if p_amount_cents is distinct from v_session.amount_cents::bigint or lower(coalesce(p_currency, '')) <> 'usd' then
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('system', 'stripe', 'checkout.amount_mismatch', 'checkout_session', v_session.id::text, p_request_id,
            jsonb_build_object('event_id', p_event_id, 'event_amount_cents', p_amount_cents, 'event_currency', p_currency));
    return query select 'amount_mismatch'::text, v_session.id, v_session.wallet_id, v_session.amount_cents, null::uuid;
    return;
  end if;

  v_amount := (v_session.amount_cents::numeric / 100)::numeric(20, 8);
  select * into v_posted from faucet_post_transaction(
    'top_up', 'checkout:' || p_stripe_session_id, p_request_id, 'stripe checkout',
    jsonb_build_object('stripe_session_id', p_stripe_session_id, 'stripe_event_id', p_event_id,
                       'checkout_session_id', v_session.id),
    array[v_session.wallet_id, faucet_system_wallet('payment_clearing')],
    array[v_amount, -v_amount]);
  if v_posted.outcome <> 'posted' then
    raise exception 'checkout % was booked before', p_stripe_session_id using errcode = '23505';
  end if;

  update checkout_sessions c set status = 'completed', completed_at = now(), ledger_transaction_id = v_posted.transaction_id
  where c.id = v_session.id;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('system', 'stripe', 'checkout.credited', 'checkout_session', v_session.id::text, p_request_id,
          jsonb_build_object('event_id', p_event_id, 'transaction_id', v_posted.transaction_id));
  return query select 'credited'::text, v_session.id, v_session.wallet_id, v_session.amount_cents, v_posted.transaction_id;
end
$$;
