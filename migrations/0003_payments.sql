-- Payments and payouts as server-side functions (docs/payments.md): each is one statement, so the
-- webhook's event record, the checkout session's state change and the ledger credit commit together
-- or not at all, and each payout transition is one conditional update. Idempotent: create or replace.
--
-- Lock order (extends 0002's rule): a checkout session or payout row is never locked after a wallet;
-- payouts lock the developer's wallet before the payout row, like every booking that touches it.

-- A paid Stripe Checkout Session credits its wallet once.
-- outcome: 'credited' | 'unknown_session' (nothing written) | 'duplicate_event' (this event id was
-- processed before) | 'already_completed' (the session was credited by another event) |
-- 'amount_mismatch' (event recorded, session left pending, nothing credited).
create or replace function faucet_complete_checkout(
  p_event_id text,
  p_event_type text,
  p_stripe_session_id text,
  p_amount_cents bigint,
  p_currency text,
  p_request_id text
) returns table (outcome text, checkout_session_id uuid, wallet_id uuid, amount_cents integer, ledger_transaction_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_session checkout_sessions%rowtype;
  v_amount numeric(20, 8);
  v_posted record;
begin
  -- Every delivery for this session queues here, so the checks below see the previous one's commit.
  select * into v_session from checkout_sessions c where c.stripe_session_id = p_stripe_session_id for update;
  if not found then
    return query select 'unknown_session'::text, null::uuid, null::uuid, null::integer, null::uuid;
    return;
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
    -- A top-up under this session's key exists although the session is pending: refuse, roll back.
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

-- Mock payout run: one `pending` payout per developer wallet whose available balance (balance −
-- active holds) is at least the threshold and that has no open payout. The payout reserves its
-- amount as a balance hold (request id 'payout:<id>', no expiry), so nothing else can spend it.
create or replace function faucet_create_payouts(p_threshold numeric, p_request_id text)
returns setof payouts
language plpgsql as $$
declare
  r record;
  v_available numeric(20, 8);
  v_payout payouts%rowtype;
begin
  if p_threshold is null or p_threshold <= 0 then
    raise exception 'threshold must be positive' using errcode = '22023';
  end if;
  for r in
    select w.id, w.developer_id from wallets w
    where w.kind = 'developer' and w.developer_id is not null
      and not exists (select 1 from payouts p where p.wallet_id = w.id and p.status in ('pending', 'processing'))
    order by w.id
  loop
    select (w.balance - faucet_held(w.id, null))::numeric(20, 8) into v_available
    from wallets w where w.id = r.id for no key update;
    continue when v_available < p_threshold;

    insert into payouts (developer_id, wallet_id, amount) values (r.developer_id, r.id, v_available)
    on conflict (wallet_id) where status in ('pending', 'processing') do nothing
    returning * into v_payout;
    continue when not found;

    insert into balance_holds (wallet_id, request_id, amount, expires_at)
    values (r.id, 'payout:' || v_payout.id, v_available, 'infinity');
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('admin', null, 'payout.created', 'payout', v_payout.id::text, p_request_id,
            jsonb_build_object('amount_usd', v_payout.amount, 'threshold_usd', p_threshold::numeric(20, 8)));
    return next v_payout;
  end loop;
end
$$;

-- pending → processing. outcome: 'approved' | 'invalid_state' | 'not_found'.
create or replace function faucet_approve_payout(p_payout_id uuid, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid)
language plpgsql as $$
#variable_conflict use_column
begin
  update payouts p set status = 'processing', operator_note = p_note, approved_at = now()
  where p.id = p_payout_id and p.status = 'pending';
  if not found then
    return query select case when exists (select 1 from payouts p where p.id = p_payout_id)
      then 'invalid_state' else 'not_found' end, p_payout_id;
    return;
  end if;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.approved', 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('operator_note', p_note, 'from', 'pending', 'to', 'processing'));
  return query select 'approved'::text, p_payout_id;
end
$$;

-- processing → paid, booking the payout: developer wallet −amount, payment clearing +amount; the
-- reservation hold is settled in the same transaction. outcome: 'paid' | 'invalid_state' | 'not_found'.
create or replace function faucet_mark_payout_paid(p_payout_id uuid, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid, ledger_transaction_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_wallet_id uuid;
  v_payout payouts%rowtype;
  v_posted record;
begin
  select p.wallet_id into v_wallet_id from payouts p where p.id = p_payout_id;
  if not found then
    return query select 'not_found'::text, p_payout_id, null::uuid;
    return;
  end if;
  perform 1 from wallets w where w.id = v_wallet_id for no key update;

  update payouts p set status = 'paid', paid_at = now(), operator_note = coalesce(p_note, p.operator_note)
  where p.id = p_payout_id and p.status = 'processing'
  returning * into v_payout;
  if not found then
    return query select 'invalid_state'::text, p_payout_id, null::uuid;
    return;
  end if;

  update balance_holds h set status = 'settled', closed_at = now()
  where h.request_id = 'payout:' || p_payout_id and h.status = 'active';
  select * into v_posted from faucet_post_transaction(
    'payout', 'payout:' || p_payout_id, p_request_id, 'mock payout',
    jsonb_build_object('payout_id', p_payout_id, 'mock', true),
    array[v_payout.wallet_id, faucet_system_wallet('payment_clearing')],
    array[-v_payout.amount, v_payout.amount]);
  if v_posted.outcome <> 'posted' then
    raise exception 'payout % could not be booked: %', p_payout_id, v_posted.outcome using errcode = '23514';
  end if;

  update payouts p set ledger_transaction_id = v_posted.transaction_id where p.id = p_payout_id;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.paid', 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('transaction_id', v_posted.transaction_id, 'amount_usd', v_payout.amount,
                             'from', 'processing', 'to', 'paid'));
  return query select 'paid'::text, p_payout_id, v_posted.transaction_id;
end
$$;
