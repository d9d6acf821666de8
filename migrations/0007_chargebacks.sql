-- Chargebacks and refunds after the credit is spent (docs/payments.md, "Chargebacks, refunds and
-- clawbacks"). A provider refund or chargeback is booked even when it takes the wallet below zero:
-- the part below zero is a receivable, recorded row by row, and a wallet may hold a negative balance
-- only while it is flagged as holding one. The developer revenue earned from the spent money is
-- clawed back by a reviewable entry; payouts gain cancel/reject from pending.
--
-- Lock order is 0002's and 0003's: checkout session or payout rows before wallets, wallets in
-- (rank, id) order.

-- Which payment a checkout session was paid with: charges, refunds and disputes name the payment
-- intent, never the session.
alter table checkout_sessions add column if not exists stripe_payment_intent_id text;
create unique index if not exists checkout_sessions_payment_intent on checkout_sessions (stripe_payment_intent_id)
  where stripe_payment_intent_id is not null;

-- A wallet below zero holds a receivable. User wallets may already go below zero through the
-- bookings of 0006 (usage_events.receivable_usd); a developer wallet only through a clawback, which
-- sets this flag (faucet_post_receivable_debit). Every other debit still refuses to go below zero (it
-- checks allow_negative and holds, not this flag). The constraint keeps 0006's name, so that running
-- 0006 again leaves this definition in place.
alter table wallets add column if not exists receivable boolean not null default false;
alter table wallets drop constraint if exists wallets_non_negative;
alter table wallets drop constraint if exists wallets_non_negative_unless_receivable;
alter table wallets add constraint wallets_non_negative_unless_receivable
  check (allow_negative or kind = 'user' or receivable or balance >= 0);

-- The part of each debit that went below zero: what the owner owes the platform, one row per booking.
create table if not exists receivables (
  id uuid primary key default gen_random_uuid(),
  wallet_id uuid not null references wallets(id),
  ledger_transaction_id uuid not null unique references ledger_transactions(id),
  kind text not null,
  amount numeric(20, 8) not null,
  created_at timestamptz not null default now(),
  constraint receivables_positive check (amount > 0)
);
create index if not exists receivables_wallet on receivables (wallet_id);

-- What has been booked per Stripe charge: refunds arrive as a cumulative `amount_refunded`, so each
-- event books only the increase over the last booked total.
create table if not exists stripe_charges (
  charge_id text primary key,
  payment_intent_id text not null,
  checkout_session_id uuid not null references checkout_sessions(id),
  refunded_cents bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- A dispute is booked once when created and credited back once if won.
create table if not exists stripe_disputes (
  dispute_id text primary key,
  charge_id text not null,
  checkout_session_id uuid not null references checkout_sessions(id),
  amount_cents bigint not null,
  status text not null default 'open',
  ledger_transaction_id uuid references ledger_transactions(id),
  reversal_transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now(),
  closed_at timestamptz
);

-- The developer revenue clawed back after a chargeback or refund of spent money, for review.
create table if not exists revenue_clawbacks (
  id uuid primary key default gen_random_uuid(),
  source_transaction_id uuid not null unique references ledger_transactions(id),
  source_kind text not null,
  user_wallet_id uuid not null references wallets(id),
  developer_id uuid not null references developers(id),
  developer_wallet_id uuid not null references wallets(id),
  spent_usd numeric(20, 8) not null,
  developer_revenue_basis_usd numeric(20, 8) not null,
  retail_basis_usd numeric(20, 8) not null,
  amount numeric(20, 8) not null,
  status text not null default 'booked',
  ledger_transaction_id uuid not null references ledger_transactions(id),
  reversal_transaction_id uuid references ledger_transactions(id),
  reversal_note text,
  created_at timestamptz not null default now(),
  reversed_at timestamptz,
  constraint revenue_clawbacks_positive check (amount > 0)
);
create index if not exists revenue_clawbacks_created on revenue_clawbacks (created_at);

alter table payouts add column if not exists closed_at timestamptz;

-- A debit that is booked even below zero (chargebacks, provider refunds, clawbacks): the wallet is
-- debited, the counter-account credited, and the part below zero recorded as a receivable.
-- outcome: 'posted' | 'duplicate' (same idempotency key: that transaction, its metadata). The
-- metadata records balance_before_usd, spent_usd (the part of the amount the wallet no longer held)
-- and receivable_usd (the part booked below zero; equal to spent_usd).
create or replace function faucet_post_receivable_debit(
  p_kind text,
  p_idempotency_key text,
  p_request_id text,
  p_reason text,
  p_metadata jsonb,
  p_wallet_id uuid,
  p_counter_wallet_id uuid,
  p_amount numeric
) returns table (outcome text, transaction_id uuid, metadata jsonb, created_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_transaction ledger_transactions%rowtype;
  v_before numeric;
  v_spent numeric;
begin
  if p_amount is null or p_amount <= 0 or p_idempotency_key is null or p_wallet_id = p_counter_wallet_id then
    raise exception 'a receivable debit needs a positive amount, a key and two wallets' using errcode = '22023';
  end if;
  perform 1 from wallets w where w.id in (p_wallet_id, p_counter_wallet_id)
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  if (select count(*) from wallets w where w.id in (p_wallet_id, p_counter_wallet_id)) <> 2 then
    raise exception 'unknown wallet in transaction' using errcode = 'P0002';
  end if;
  perform faucet_roll_up_locked(p_wallet_id);
  perform faucet_roll_up_locked(p_counter_wallet_id);

  select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
  if found then
    return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
    return;
  end if;

  select w.balance into v_before from wallets w where w.id = p_wallet_id;
  v_spent := p_amount - least(greatest(v_before, 0), p_amount);

  insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
  values (p_kind, p_idempotency_key, p_request_id, p_reason,
          coalesce(p_metadata, '{}'::jsonb) || jsonb_build_object(
            'balance_before_usd', v_before::numeric(20, 8)::text,
            'spent_usd', v_spent::numeric(20, 8)::text,
            'receivable_usd', v_spent::numeric(20, 8)::text))
  returning * into v_transaction;

  if v_spent > 0 then
    update wallets set receivable = true where id = p_wallet_id and not allow_negative;
    insert into receivables (wallet_id, ledger_transaction_id, kind, amount)
    values (p_wallet_id, v_transaction.id, p_kind, v_spent);
  end if;
  perform faucet_apply_entries(v_transaction.id, array[p_wallet_id, p_counter_wallet_id], array[-p_amount, p_amount]);
  return query select 'posted'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
end
$$;

-- A paid checkout session credits its wallet once (as in 0003) and now also records the payment
-- intent it was paid with, on every delivery that names one, so later refunds and disputes find it.
drop function if exists faucet_complete_checkout(text, text, text, bigint, text, text);
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

-- A Stripe charge refund, dispute or dispute outcome against a credited checkout session.
-- p_action: 'refund' (p_amount_cents is the charge's cumulative amount_refunded; the increase over
-- the last booked total is debited), 'dispute' (p_amount_cents disputed: debited once per dispute),
-- 'dispute_won' (the dispute's booked amount is credited back once).
-- outcome: 'booked' | 'duplicate_event' | 'nothing_to_book' (no increase, already booked or a
-- dispute that was never booked) | 'unknown_charge' (no credited session has this payment intent:
-- event and an audit row recorded, no money moves) | 'amount_mismatch' (more than the session paid,
-- or not USD: audited, nothing booked).
-- The wallet debit is a receivable debit (may go below zero); spent_usd is the part already spent.
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

-- Book a clawback of developer revenue computed by the caller (workers/shared/ledger/claw-back-revenue.ts):
-- developer wallet −amount (a receivable debit: may go below zero), platform adjustments +amount, and
-- the review row. Once per source transaction. outcome: 'booked' | 'duplicate' (returns the first) |
-- 'source_reversed' (the chargeback's dispute was won meanwhile: nothing booked).
create or replace function faucet_book_clawback(
  p_source_transaction_id uuid,
  p_user_wallet_id uuid,
  p_spent numeric,
  p_developer_revenue_basis numeric,
  p_retail_basis numeric,
  p_amount numeric,
  p_request_id text
) returns table (outcome text, clawback_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_existing revenue_clawbacks%rowtype;
  v_source ledger_transactions%rowtype;
  v_developer_id uuid;
  v_developer_wallet_id uuid;
  v_posted record;
  v_id uuid;
begin
  select * into v_existing from revenue_clawbacks c where c.source_transaction_id = p_source_transaction_id;
  if found then
    return query select 'duplicate'::text, v_existing.id;
    return;
  end if;
  select * into v_source from ledger_transactions t where t.id = p_source_transaction_id;
  -- A dispute already won gave the money back: nothing is left to claw back.
  if exists (select 1 from stripe_disputes d where d.ledger_transaction_id = p_source_transaction_id and d.status = 'won') then
    return query select 'source_reversed'::text, null::uuid;
    return;
  end if;
  select a.developer_id, faucet_developer_wallet_of_app(a.id) into v_developer_id, v_developer_wallet_id
  from wallets w join end_users u on u.id = w.end_user_id join apps a on a.id = u.app_id where w.id = p_user_wallet_id;
  if v_developer_id is null or v_source.id is null then
    raise exception 'clawback source or developer not found' using errcode = 'P0002';
  end if;

  select * into v_posted from faucet_post_receivable_debit(
    'revenue_clawback', 'clawback:' || p_source_transaction_id, p_request_id, 'developer revenue of charged-back money',
    jsonb_build_object('source_transaction_id', p_source_transaction_id, 'source_kind', v_source.kind,
                       'user_wallet_id', p_user_wallet_id),
    v_developer_wallet_id, faucet_system_wallet('platform_adjustments'), p_amount);

  insert into revenue_clawbacks (source_transaction_id, source_kind, user_wallet_id, developer_id, developer_wallet_id,
                                 spent_usd, developer_revenue_basis_usd, retail_basis_usd, amount, ledger_transaction_id)
  values (p_source_transaction_id, v_source.kind, p_user_wallet_id, v_developer_id, v_developer_wallet_id,
          p_spent, p_developer_revenue_basis, p_retail_basis, p_amount, v_posted.transaction_id)
  on conflict (source_transaction_id) do nothing
  returning id into v_id;
  if v_id is null then
    select c.id into v_id from revenue_clawbacks c where c.source_transaction_id = p_source_transaction_id;
    return query select 'duplicate'::text, v_id;
    return;
  end if;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('system', null, 'clawback.booked', 'revenue_clawback', v_id::text, p_request_id,
          jsonb_build_object('transaction_id', v_posted.transaction_id, 'amount_usd', p_amount::numeric(20, 8),
                             'source_transaction_id', p_source_transaction_id));
  return query select 'booked'::text, v_id;
end
$$;

-- booked → reversed: the developer is credited back (platform adjustments −amount). Idempotent.
-- outcome: 'reversed' | 'already_reversed' | 'not_found'.
create or replace function faucet_reverse_clawback(p_clawback_id uuid, p_note text, p_actor_type text, p_request_id text)
returns table (outcome text, clawback_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_clawback revenue_clawbacks%rowtype;
  v_posted record;
begin
  select * into v_clawback from revenue_clawbacks c where c.id = p_clawback_id for update;
  if not found then
    return query select 'not_found'::text, p_clawback_id;
    return;
  end if;
  if v_clawback.status = 'reversed' then
    return query select 'already_reversed'::text, p_clawback_id;
    return;
  end if;
  select * into v_posted from faucet_post_transaction(
    'revenue_clawback_reversal', 'clawback_reversal:' || p_clawback_id, p_request_id, p_note,
    jsonb_build_object('clawback_id', p_clawback_id, 'clawback_transaction_id', v_clawback.ledger_transaction_id),
    array[v_clawback.developer_wallet_id, faucet_system_wallet('platform_adjustments')],
    array[v_clawback.amount, -v_clawback.amount]);
  update revenue_clawbacks c set status = 'reversed', reversed_at = now(), reversal_note = p_note,
    reversal_transaction_id = v_posted.transaction_id
  where c.id = p_clawback_id;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values (p_actor_type, null, 'clawback.reversed', 'revenue_clawback', p_clawback_id::text, p_request_id,
          jsonb_build_object('note', p_note, 'transaction_id', v_posted.transaction_id, 'amount_usd', v_clawback.amount));
  return query select 'reversed'::text, p_clawback_id;
end
$$;

-- pending → cancelled | rejected, releasing the payout's reservation hold in the same statement.
-- outcome: 'closed' | 'already_closed' (this payout is already in the asked state: idempotent) |
-- 'invalid_state' | 'not_found'. One conditional update: of a cancel racing an approve one wins.
create or replace function faucet_close_payout(p_payout_id uuid, p_to text, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_status text;
begin
  if p_to not in ('cancelled', 'rejected') then
    raise exception 'a payout closes as cancelled or rejected' using errcode = '22023';
  end if;
  update payouts p set status = p_to, operator_note = p_note, closed_at = now()
  where p.id = p_payout_id and p.status = 'pending';
  if not found then
    select p.status into v_status from payouts p where p.id = p_payout_id;
    return query select case when v_status is null then 'not_found' when v_status = p_to then 'already_closed'
      else 'invalid_state' end, p_payout_id;
    return;
  end if;
  update balance_holds h set status = 'released', closed_at = now()
  where h.request_id = 'payout:' || p_payout_id and h.status = 'active';
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.' || p_to, 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('operator_note', p_note, 'from', 'pending', 'to', p_to));
  return query select 'closed'::text, p_payout_id;
end
$$;
