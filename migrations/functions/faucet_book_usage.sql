-- The current definition of faucet_book_usage (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book one rated model call: the usage record, its balanced transaction (user −retail; developer,
-- platform revenue and upstream payable +their shares), the settlement of the call's own hold and
-- the close of its gateway call. Booked once per money key. outcome: 'booked' | 'duplicate'
-- (returns the first booking) | 'insufficient_balance' (balance − other holds < retail and the
-- caller did not allow a receivable: nothing is written). With p_allow_receivable the booking is
-- written anyway and the part the wallet could not cover is recorded as `receivable_usd`.
-- The usage record keeps the catalog version, the token parts and the per-million price of each
-- class the call was rated with (migration 0013): all prices null (no catalog price) or none.
-- A booking that names a gateway call must be that call's (its money key and end user): it closes
-- that call alone. faucet_book_usage_batch books each element of a flush through this function.
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
  p_allow_receivable boolean,
  p_price_catalog_version text,
  p_cache_write_tokens integer,
  p_audio_input_tokens integer,
  p_audio_output_tokens integer,
  p_reasoning_tokens integer,
  p_input_price numeric,
  p_cached_input_price numeric,
  p_cache_write_price numeric,
  p_audio_input_price numeric,
  p_output_price numeric,
  p_reasoning_price numeric,
  p_audio_output_price numeric
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
  if num_nulls(p_upstream_cost, p_upstream_payable, p_retail, p_developer_revenue, p_platform_share) > 0
     or least(p_upstream_cost, p_upstream_payable, p_retail, p_developer_revenue, p_platform_share) < 0
     or p_retail <> p_upstream_payable + p_developer_revenue + p_platform_share
     or p_upstream_cost <> round(p_upstream_cost, 8) or p_upstream_payable <> round(p_upstream_payable, 8)
     or p_retail <> round(p_retail, 8) or p_developer_revenue <> round(p_developer_revenue, 8)
     or p_platform_share <> round(p_platform_share, 8) then
    raise exception 'rated amounts must be non-negative, of at most 8 decimals, and retail must equal payable + developer + platform'
      using errcode = '22023';
  end if;
  if p_call_id is not null and not exists (
    select 1 from gateway_calls g where g.id = p_call_id and g.money_key = p_request_id and g.end_user_id = p_end_user_id
  ) then
    raise exception 'no such gateway call for this booking' using errcode = 'P0002';
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
    platform_share_usd, provider_credential_id, ledger_transaction_id, receivable_usd, price_catalog_version,
    cache_write_tokens, audio_input_tokens, audio_output_tokens, reasoning_tokens, input_price_per_mtok_usd,
    cached_input_price_per_mtok_usd, cache_write_price_per_mtok_usd, audio_input_price_per_mtok_usd,
    output_price_per_mtok_usd, reasoning_price_per_mtok_usd, audio_output_price_per_mtok_usd
  ) values (
    p_request_id, p_client_request_id, p_call_id, p_app_id, p_end_user_id, p_feature_key, p_route_mode, p_provider,
    p_model, p_input_tokens, p_output_tokens, p_cached_tokens, p_estimated, p_upstream_cost, p_retail,
    p_developer_revenue, p_platform_share, p_provider_credential_id, v_transaction_id, v_receivable, p_price_catalog_version,
    p_cache_write_tokens, p_audio_input_tokens, p_audio_output_tokens, p_reasoning_tokens, p_input_price,
    p_cached_input_price, p_cache_write_price, p_audio_input_price, p_output_price, p_reasoning_price, p_audio_output_price
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
