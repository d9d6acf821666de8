-- The ledger's booking functions, and the append-only credits of its hot accounts. Each booking is
-- one statement (one round trip); the statements inside run in a fixed order with a fresh snapshot
-- each (READ COMMITTED), so a check made after a row lock sees every booking committed before it.
-- Idempotent: create if not exists / create or replace.
--
-- Deadlock rule: every transaction locks wallet rows in one global order, (rank, id), where rank is
-- 0 for user wallets, 1 for developer wallets, 2 for system accounts. Locks are FOR NO KEY UPDATE,
-- which does not conflict with the KEY SHARE locks of foreign-key checks.
--
-- Hot accounts: every usage booking credits the app's developer wallet and the platform's revenue
-- and upstream-payable accounts. Updating those few rows in every booking queues all bookings behind
-- one another (and deadlocked at 16 writers when the order was not fixed), so a booking appends its
-- credits to wallet_balance_deltas instead and locks no hot row. A wallet's balance is
-- wallets.balance + its pending deltas (faucet_wallet_balance); anything that debits a wallet locks
-- it and folds its deltas in first (faucet_roll_up_locked), and faucet_roll_up_balances does the
-- same for all wallets as housekeeping.

create table if not exists wallet_balance_deltas (
  id bigserial primary key,
  wallet_id uuid not null references wallets(id),
  amount numeric(20, 8) not null,
  created_at timestamptz not null default now(),
  constraint wallet_balance_deltas_positive check (amount > 0)
);
create index if not exists wallet_balance_deltas_wallet on wallet_balance_deltas (wallet_id);

-- System accounts every booking may need (the seed creates the same rows; both are no-ops when present).
insert into wallets (kind, allow_negative) values
  ('platform_revenue', false),
  ('platform_upstream_payable', false),
  ('payment_clearing', true),
  ('platform_adjustments', true)
on conflict (kind) where end_user_id is null and developer_id is null do nothing;

create or replace function faucet_wallet_rank(p_kind text) returns integer
language sql immutable as $$
  select case p_kind when 'user' then 0 when 'developer' then 1 else 2 end
$$;

-- Sum of a wallet's active, unexpired holds, leaving out one request's own hold (null: leave out none).
create or replace function faucet_held(p_wallet_id uuid, p_except_request_id text) returns numeric
language sql stable as $$
  select coalesce(sum(amount), 0)::numeric(20, 8) from balance_holds
  where wallet_id = p_wallet_id and status = 'active' and expires_at > now()
    and (p_except_request_id is null or request_id <> p_except_request_id)
$$;

-- Credits appended to a hot account and not yet folded into its balance row.
create or replace function faucet_pending(p_wallet_id uuid) returns numeric
language sql stable as $$
  select coalesce(sum(amount), 0)::numeric(20, 8) from wallet_balance_deltas where wallet_id = p_wallet_id
$$;

-- A wallet's balance: the row's cached balance plus its pending credits.
create or replace function faucet_wallet_balance(p_wallet_id uuid) returns numeric
language sql stable as $$
  select (w.balance + faucet_pending(w.id))::numeric(20, 8) from wallets w where w.id = p_wallet_id
$$;

-- Fold a wallet's pending credits into its balance row. The caller holds the wallet's row lock.
-- Credits appended by bookings still in flight stay pending for the next roll-up.
create or replace function faucet_roll_up_locked(p_wallet_id uuid) returns numeric
language plpgsql as $$
declare
  v_total numeric;
begin
  with moved as (delete from wallet_balance_deltas where wallet_id = p_wallet_id returning amount)
  select coalesce(sum(amount), 0) into v_total from moved;
  if v_total <> 0 then
    update wallets set balance = balance + v_total where id = p_wallet_id;
  end if;
  return v_total;
end
$$;

-- Housekeeping: fold the pending credits of every wallet, locking in the global order.
create or replace function faucet_roll_up_balances() returns integer
language plpgsql as $$
declare
  r record;
  v_count integer := 0;
begin
  for r in
    select w.id from wallets w
    where exists (select 1 from wallet_balance_deltas d where d.wallet_id = w.id)
    order by faucet_wallet_rank(w.kind), w.id
  loop
    perform 1 from wallets where id = r.id for no key update;
    perform faucet_roll_up_locked(r.id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;

create or replace function faucet_system_wallet(p_kind text) returns uuid
language plpgsql stable as $$
declare
  v_id uuid;
begin
  select id into v_id from wallets where kind = p_kind and end_user_id is null and developer_id is null;
  if v_id is null then
    raise exception 'system wallet % is missing', p_kind using errcode = 'P0002';
  end if;
  return v_id;
end
$$;

create or replace function faucet_user_wallet(p_end_user_id uuid) returns uuid
language plpgsql as $$
declare
  v_id uuid;
begin
  insert into wallets (kind, end_user_id) values ('user', p_end_user_id) on conflict (end_user_id) do nothing;
  select id into v_id from wallets where end_user_id = p_end_user_id;
  return v_id;
end
$$;

create or replace function faucet_developer_wallet_of_app(p_app_id uuid) returns uuid
language plpgsql as $$
declare
  v_developer_id uuid;
  v_id uuid;
begin
  select developer_id into v_developer_id from apps where id = p_app_id;
  if v_developer_id is null then
    raise exception 'app % does not exist', p_app_id using errcode = 'P0002';
  end if;
  insert into wallets (kind, developer_id) values ('developer', v_developer_id) on conflict (developer_id) do nothing;
  select id into v_id from wallets where developer_id = v_developer_id;
  return v_id;
end
$$;

-- Appends the entries of one transaction and moves the cached balances, locking in (rank, id) order.
-- Zero amounts are left out. The caller has checked the transaction sums to zero.
create or replace function faucet_apply_entries(p_transaction_id uuid, p_wallet_ids uuid[], p_amounts numeric[])
returns void
language plpgsql as $$
declare
  r record;
begin
  insert into ledger_entries (transaction_id, wallet_id, amount)
  select p_transaction_id, t.wallet_id, t.amount
  from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
  where t.amount <> 0;

  for r in
    select t.wallet_id, sum(t.amount) as delta
    from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
    join wallets w on w.id = t.wallet_id
    group by t.wallet_id, w.kind
    having sum(t.amount) <> 0
    order by faucet_wallet_rank(w.kind), t.wallet_id
  loop
    update wallets set balance = balance + r.delta where id = r.wallet_id;
  end loop;
end
$$;

-- One balanced transaction of any kind (adjustments, top-ups, payouts, ...).
-- outcome: 'posted' | 'duplicate' (same idempotency key seen before: returns that transaction)
--        | 'insufficient_balance' (a debit would take a wallet below zero, counting its holds).
create or replace function faucet_post_transaction(
  p_kind text,
  p_idempotency_key text,
  p_request_id text,
  p_reason text,
  p_metadata jsonb,
  p_wallet_ids uuid[],
  p_amounts numeric[]
) returns table (outcome text, transaction_id uuid, metadata jsonb, created_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_transaction ledger_transactions%rowtype;
  r record;
begin
  if coalesce(array_length(p_wallet_ids, 1), 0) < 2 or array_length(p_wallet_ids, 1) <> array_length(p_amounts, 1) then
    raise exception 'a transaction needs at least two entries' using errcode = '22023';
  end if;
  if (select sum(a) from unnest(p_amounts) as a) <> 0 then
    raise exception 'entries of a transaction must sum to zero' using errcode = '22023';
  end if;

  perform 1 from wallets w where w.id = any (p_wallet_ids)
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  if (select count(*) from wallets w where w.id = any (p_wallet_ids)) <> (select count(distinct x) from unnest(p_wallet_ids) as x) then
    raise exception 'unknown wallet in transaction' using errcode = 'P0002';
  end if;
  perform faucet_roll_up_locked(x) from (select distinct x from unnest(p_wallet_ids) as x) as ids;

  if p_idempotency_key is not null then
    select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
    if found then
      return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
      return;
    end if;
  end if;

  for r in
    select w.id, w.balance, w.allow_negative, sum(t.amount) as delta
    from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
    join wallets w on w.id = t.wallet_id
    group by w.id
  loop
    if r.delta < 0 and not r.allow_negative and r.balance - faucet_held(r.id, null) + r.delta < 0 then
      return query select 'insufficient_balance'::text, null::uuid, null::jsonb, null::timestamptz;
      return;
    end if;
  end loop;

  insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
  values (p_kind, p_idempotency_key, p_request_id, p_reason, coalesce(p_metadata, '{}'::jsonb))
  on conflict (idempotency_key) do nothing
  returning * into v_transaction;
  if v_transaction.id is null then
    -- Same key committed meanwhile by a transaction over other wallets.
    select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
    return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
    return;
  end if;

  perform faucet_apply_entries(v_transaction.id, p_wallet_ids, p_amounts);
  return query select 'posted'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
end
$$;

-- Reserve an amount against the end user's available balance (balance − active unexpired holds).
-- outcome: 'reserved' | 'duplicate' (a hold for this request exists: returns it) | 'insufficient_balance'.
create or replace function faucet_reserve_hold(p_end_user_id uuid, p_request_id text, p_amount numeric, p_ttl_seconds integer)
returns table (outcome text, hold_id uuid, wallet_id uuid, amount numeric, expires_at timestamptz, available_usd numeric)
language plpgsql as $$
#variable_conflict use_column
declare
  v_wallet_id uuid;
  v_balance numeric;
  v_available numeric;
  v_hold balance_holds%rowtype;
begin
  if p_amount < 0 or p_ttl_seconds <= 0 then
    raise exception 'hold amount must not be negative and its lifetime positive' using errcode = '22023';
  end if;
  select id, balance into v_wallet_id, v_balance from wallets where end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    select balance into v_balance from wallets where id = v_wallet_id for no key update;
  end if;

  select * into v_hold from balance_holds h where h.request_id = p_request_id;
  if found then
    return query select 'duplicate'::text, v_hold.id, v_hold.wallet_id, v_hold.amount, v_hold.expires_at,
      (v_balance - faucet_held(v_wallet_id, null))::numeric(20, 8);
    return;
  end if;

  v_available := v_balance - faucet_held(v_wallet_id, null);
  if v_available < p_amount then
    return query select 'insufficient_balance'::text, null::uuid, v_wallet_id, p_amount::numeric(20, 8), null::timestamptz,
      v_available::numeric(20, 8);
    return;
  end if;

  insert into balance_holds (wallet_id, request_id, amount, expires_at)
  values (v_wallet_id, p_request_id, p_amount, now() + make_interval(secs => p_ttl_seconds))
  returning * into v_hold;
  return query select 'reserved'::text, v_hold.id, v_wallet_id, v_hold.amount, v_hold.expires_at,
    (v_available - p_amount)::numeric(20, 8);
end
$$;

-- Book one rated model call: the usage record, its balanced transaction (user −retail; developer,
-- platform revenue and upstream payable +their shares) and the settlement of the request's hold.
-- Booked once per request_id. outcome: 'booked' | 'duplicate' (returns the first booking) |
-- 'insufficient_balance' (balance − other holds < retail: nothing is written).
create or replace function faucet_book_usage(
  p_request_id text,
  p_app_id uuid,
  p_end_user_id uuid,
  p_feature_key text,
  p_route_mode text,
  p_provider text,
  p_model text,
  p_input_tokens integer,
  p_output_tokens integer,
  p_cached_tokens integer,
  p_estimated boolean,
  p_upstream_cost numeric,
  p_upstream_payable numeric,
  p_retail numeric,
  p_developer_revenue numeric,
  p_platform_share numeric,
  p_provider_credential_id uuid,
  p_metadata jsonb
) returns table (
  outcome text,
  usage_event_id uuid,
  ledger_transaction_id uuid,
  upstream_cost_usd numeric,
  retail_usd numeric,
  developer_revenue_usd numeric,
  platform_share_usd numeric,
  balance_usd numeric,
  created_at timestamptz
)
language plpgsql as $$
#variable_conflict use_column
declare
  v_wallet_id uuid;
  v_balance numeric;
  v_event usage_events%rowtype;
  v_transaction_id uuid;
  v_developer_wallet_id uuid;
  v_revenue_id uuid;
  v_payable_id uuid;
begin
  if least(p_upstream_cost, p_upstream_payable, p_retail, p_developer_revenue, p_platform_share) < 0
     or p_retail <> p_upstream_payable + p_developer_revenue + p_platform_share then
    raise exception 'rated amounts must be non-negative and retail must equal payable + developer + platform'
      using errcode = '22023';
  end if;

  select id, balance into v_wallet_id, v_balance from wallets where end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    select balance into v_balance from wallets where id = v_wallet_id for no key update;
  end if;

  select * into v_event from usage_events u where u.request_id = p_request_id;
  if found then
    if v_event.end_user_id is distinct from p_end_user_id then
      raise exception 'request id already booked for another end user' using errcode = '23505';
    end if;
    return query select 'duplicate'::text, v_event.id, v_event.ledger_transaction_id, v_event.upstream_cost_usd,
      v_event.retail_usd, v_event.developer_revenue_usd, v_event.platform_share_usd, v_balance::numeric(20, 8),
      v_event.created_at;
    return;
  end if;

  if p_retail > 0 and v_balance - faucet_held(v_wallet_id, p_request_id) < p_retail then
    return query select 'insufficient_balance'::text, null::uuid, null::uuid, null::numeric, p_retail::numeric(20, 8),
      null::numeric, null::numeric, v_balance::numeric(20, 8), null::timestamptz;
    return;
  end if;

  if p_retail > 0 then
    insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
    values ('usage', 'usage:' || p_request_id, p_request_id, null, coalesce(p_metadata, '{}'::jsonb))
    returning id into v_transaction_id;
  end if;

  insert into usage_events (
    request_id, app_id, end_user_id, feature_key, route_mode, provider, model, input_tokens, output_tokens,
    cached_tokens, estimated, upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd,
    provider_credential_id, ledger_transaction_id
  ) values (
    p_request_id, p_app_id, p_end_user_id, p_feature_key, p_route_mode, p_provider, p_model, p_input_tokens,
    p_output_tokens, p_cached_tokens, p_estimated, p_upstream_cost, p_retail, p_developer_revenue,
    p_platform_share, p_provider_credential_id, v_transaction_id
  ) returning * into v_event;

  if p_retail > 0 then
    select w.id into v_developer_wallet_id from apps a join wallets w on w.developer_id = a.developer_id where a.id = p_app_id;
    if v_developer_wallet_id is null then
      v_developer_wallet_id := faucet_developer_wallet_of_app(p_app_id);
    end if;
    select (array_agg(id) filter (where kind = 'platform_revenue'))[1], (array_agg(id) filter (where kind = 'platform_upstream_payable'))[1]
      into v_revenue_id, v_payable_id
    from wallets where kind in ('platform_revenue', 'platform_upstream_payable') and end_user_id is null and developer_id is null;
    if v_revenue_id is null or v_payable_id is null then
      raise exception 'platform accounts are missing' using errcode = 'P0002';
    end if;

    insert into ledger_entries (transaction_id, wallet_id, amount)
    select v_transaction_id, t.wallet_id, t.amount
    from (values (v_wallet_id, -p_retail), (v_developer_wallet_id, p_developer_revenue),
                 (v_revenue_id, p_platform_share), (v_payable_id, p_upstream_payable)) as t(wallet_id, amount)
    where t.amount <> 0;

    update wallets set balance = balance - p_retail where id = v_wallet_id;
    -- The hot accounts' credits are appended, not applied: no booking waits for another's commit.
    insert into wallet_balance_deltas (wallet_id, amount)
    select t.wallet_id, t.amount
    from (values (v_developer_wallet_id, p_developer_revenue), (v_revenue_id, p_platform_share),
                 (v_payable_id, p_upstream_payable)) as t(wallet_id, amount)
    where t.amount <> 0;
  end if;

  update balance_holds set status = 'settled', closed_at = now()
  where request_id = p_request_id and wallet_id = v_wallet_id and status = 'active';

  return query select 'booked'::text, v_event.id, v_transaction_id, v_event.upstream_cost_usd, v_event.retail_usd,
    v_event.developer_revenue_usd, v_event.platform_share_usd, (v_balance - p_retail)::numeric(20, 8), v_event.created_at;
end
$$;
