-- Money keys the server owns (DESIGN §5). A gateway call's hold, booking and budget reservation are
-- keyed by `call:<uuid>`, a key the gateway generates for that call alone; a local usage report's
-- booking by `local:<end user>:<report id>`. The client's x-request-id is a correlation id, and
-- (scoped to its end user) the idempotency key of a gateway call: `gateway_calls` claims it while
-- the call is in flight or billed, and gives it back when the call is abandoned unbilled.
--
-- `gateway_calls` is also the durable record of calls in flight: a call the gateway could not
-- settle (its isolate ended before the booking) is booked by the API's cron at its bound once its
-- deadline and a grace period have passed.

create table if not exists gateway_calls (
  id uuid primary key,
  money_key text not null unique,
  client_request_id text not null,
  -- SHA-256 of the request as sent (body and requested route), to tell a retry from a reuse.
  fingerprint text not null,
  app_id uuid not null references apps(id),
  end_user_id uuid not null references end_users(id),
  feature_key text not null,
  -- The route chosen in the authorize statement; null when none could be (the call is refused).
  route_mode text,
  provider text not null,
  model text not null,
  provider_credential_id uuid references provider_credentials(id),
  -- The most tokens the call can be billed for (the hold's worst case): what the sweeper books.
  bound_input_tokens integer not null check (bound_input_tokens >= 0),
  bound_output_tokens integer not null check (bound_output_tokens >= 0),
  status text not null default 'in_flight',
  deadline_at timestamptz not null,
  created_at timestamptz not null default now(),
  closed_at timestamptz,
  constraint gateway_calls_status check (status in ('in_flight', 'settled', 'abandoned'))
);
create unique index if not exists gateway_calls_idempotency
  on gateway_calls (end_user_id, client_request_id) where status <> 'abandoned';
create index if not exists gateway_calls_in_flight on gateway_calls (deadline_at) where status = 'in_flight';

alter table usage_events add column if not exists client_request_id text;
alter table usage_events add column if not exists call_id uuid references gateway_calls(id);
-- What the user could not cover when the booking was written anyway (a receivable; DESIGN §5).
alter table usage_events add column if not exists receivable_usd numeric(20, 8) not null default 0;
create unique index if not exists usage_events_call on usage_events (call_id) where call_id is not null;
create index if not exists usage_events_client_request on usage_events (end_user_id, client_request_id);

-- A user wallet may go below zero only through a booking that must not be dropped (a call whose
-- cost outgrew its hold, a chargeback): the negative balance is a receivable from the user, and
-- every debit path that can refuse (holds, bookings with allow_receivable false, transactions) still
-- refuses to go below zero. Other wallets keep the hard floor.
alter table wallets drop constraint if exists wallets_non_negative;
do $$ begin
  alter table wallets add constraint wallets_non_negative_unless_receivable check (allow_negative or kind = 'user' or balance >= 0);
exception when duplicate_object then null;
end $$;

-- Abandon a call that was never billed: release its hold and its budget reservation and give its
-- client request id back (a same-id retry is then served). A no-op for a call already booked.
create or replace function faucet_abandon_call(p_money_key text) returns boolean
language plpgsql as $$
begin
  if exists (select 1 from usage_events u where u.request_id = p_money_key) then
    return false;
  end if;
  update balance_holds set status = 'released', closed_at = now() where request_id = p_money_key and status = 'active';
  delete from provider_credential_reservations where request_id = p_money_key;
  update gateway_calls set status = 'abandoned', closed_at = now() where money_key = p_money_key and status = 'in_flight';
  return true;
end
$$;

drop function if exists faucet_book_usage(text, uuid, uuid, text, text, text, text, integer, integer, integer, boolean,
  numeric, numeric, numeric, numeric, numeric, uuid, jsonb);

-- Book one rated model call: the usage record, its balanced transaction (user −retail; developer,
-- platform revenue and upstream payable +their shares), the settlement of the call's own hold and
-- the close of its gateway call. Booked once per money key. outcome: 'booked' | 'duplicate'
-- (returns the first booking) | 'insufficient_balance' (balance − other holds < retail and the
-- caller did not allow a receivable: nothing is written). With p_allow_receivable the booking is
-- written anyway and the part the wallet could not cover is recorded as `receivable_usd`.
create or replace function faucet_book_usage(
  p_request_id text,
  p_client_request_id text,
  p_call_id uuid,
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
  p_metadata jsonb,
  p_allow_receivable boolean
) returns table (
  outcome text,
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
  v_wallet_id uuid;
  v_balance numeric;
  v_covered numeric;
  v_receivable numeric := 0;
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
      v_event.receivable_usd, v_event.created_at;
    return;
  end if;

  if p_retail > 0 then
    v_covered := greatest(v_balance - faucet_held(v_wallet_id, p_request_id), 0);
    if v_covered < p_retail then
      if not p_allow_receivable then
        return query select 'insufficient_balance'::text, null::uuid, null::uuid, null::numeric, p_retail::numeric(20, 8),
          null::numeric, null::numeric, v_balance::numeric(20, 8), null::numeric, null::timestamptz;
        return;
      end if;
      v_receivable := p_retail - v_covered;
    end if;
  end if;

  if p_retail > 0 then
    insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
    values ('usage', 'usage:' || p_request_id, coalesce(p_client_request_id, p_request_id), null, coalesce(p_metadata, '{}'::jsonb))
    returning id into v_transaction_id;
  end if;

  insert into usage_events (
    request_id, client_request_id, call_id, app_id, end_user_id, feature_key, route_mode, provider, model,
    input_tokens, output_tokens, cached_tokens, estimated, upstream_cost_usd, retail_usd, developer_revenue_usd,
    platform_share_usd, provider_credential_id, ledger_transaction_id, receivable_usd
  ) values (
    p_request_id, p_client_request_id, p_call_id, p_app_id, p_end_user_id, p_feature_key, p_route_mode, p_provider,
    p_model, p_input_tokens, p_output_tokens, p_cached_tokens, p_estimated, p_upstream_cost, p_retail,
    p_developer_revenue, p_platform_share, p_provider_credential_id, v_transaction_id, v_receivable
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

  -- Only this call's own hold is settled (a hold is keyed by the same money key).
  update balance_holds set status = 'settled', closed_at = now()
  where request_id = p_request_id and wallet_id = v_wallet_id and status = 'active';
  if p_call_id is not null then
    update gateway_calls set status = 'settled', closed_at = now() where id = p_call_id and status = 'in_flight';
  end if;

  return query select 'booked'::text, v_event.id, v_transaction_id, v_event.upstream_cost_usd, v_event.retail_usd,
    v_event.developer_revenue_usd, v_event.platform_share_usd, (v_balance - p_retail)::numeric(20, 8),
    v_event.receivable_usd, v_event.created_at;
end
$$;
