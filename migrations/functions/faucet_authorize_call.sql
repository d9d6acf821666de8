-- The current definition of faucet_authorize_call (migrations/README.md: edit it here; the runner re-applies a changed file).
create or replace function faucet_authorize_call(
  p_token_hash text,
  -- null: the app's default feature
  p_feature_key text,
  p_call_id uuid,
  p_money_key text,
  p_client_request_id text,
  p_fingerprint text,
  -- 'platform' | 'developer_key' | 'byok' | null (the gateway chooses)
  p_requested_route text,
  p_provider text,
  p_model text,
  p_bound_input_tokens integer,
  p_bound_output_tokens integer,
  -- Worst-case retail on the platform route; null when the model has no catalog price.
  p_platform_hold numeric,
  -- Worst-case upstream cost at catalog price: the developer key's budget reservation, and its hold
  -- when the feature has no developer price; null when unpriced (a `custom` model always is: it is
  -- served on the developer_key route only at the feature's developer price).
  p_catalog_cost numeric,
  p_pool_available boolean,
  p_hold_ttl_seconds integer,
  p_max_duration_seconds integer,
  -- The gateway's rating settings (basis points), recorded on the call with the feature's prices so
  -- that whoever books it books it as authorized (migration 0014); null: not recorded.
  p_platform_markup_bps integer default null,
  p_platform_fee_bps integer default null,
  -- Fallback and aliases (migration 0015): the alias the call's model named (null: none) and the
  -- feature's fallback list ("provider:model", in order) the gateway sized the bounds and holds above
  -- with. When either differs from the feature's (a change since the gateway last saw it), nothing is
  -- written: the outcome is 'routing_changed' with the feature's current ones, and the gateway asks
  -- again. Null p_fallbacks: a gateway that does not fall back (nothing checked, nothing answered).
  p_alias text default null,
  p_fallbacks jsonb default null
) returns table (
  outcome text,
  app_id uuid,
  end_user_id uuid,
  developer_share_bps integer,
  developer_price_per_mtok_usd numeric,
  open_fee_usd numeric,
  route_mode text,
  credential_id uuid,
  ciphertext text,
  iv text,
  key_version integer,
  hold_amount numeric,
  -- The feature the call used (the app's default when it named none) and its output cap.
  feature_key text,
  max_output_tokens integer,
  -- On a refusal by a per-end-user limit: the limit (USD, or calls per minute), and for 'rate_limited'
  -- the seconds until a call leaves the 60 s window.
  refused_limit numeric,
  retry_after_seconds integer,
  -- The feature's aliases and fallbacks (when the gateway passed p_fallbacks), and on the byok route
  -- the end user's active key of each fallback provider other than the call's: {provider: {id,
  -- ciphertext, iv, key_version}}.
  model_aliases jsonb,
  fallback_models jsonb,
  fallback_keys jsonb
)
language plpgsql as $$
#variable_conflict use_column
declare
  v_context record;
  v_session record;
  v_app record;
  v_feature record;
  v_bound_output integer;
  v_key record;
  v_route text;
  v_hold numeric := 0;
  v_budget text;
  v_outcome text;
  v_recent integer;
  v_slots integer := 0;
  v_retry_after integer;
  v_spent_day numeric;
  v_spent_month numeric;
  v_in_flight numeric;
  v_refused_limit numeric;
begin
  select null::uuid as id, null::text as ciphertext, null::text as iv, null::integer as key_version into v_key;

  -- 1–2. The session (live, not revoked), its app's developer (not suspended), the app (not
  --      archived), the feature the call names or the app's default (not archived), the model
  --      (allowed) and the routing the gateway sized its hold with: faucet_call_context, the one
  --      definition faucet_lease_context shares.
  select * into v_context from faucet_call_context(p_token_hash, p_feature_key, p_provider, p_model, p_alias, p_fallbacks);
  if v_context.outcome in ('unauthorized', 'developer_suspended') then
    return query select v_context.outcome, null::uuid, null::uuid, null::integer, null::numeric, null::numeric,
      null::text, null::uuid, null::text, null::text, null::integer, null::numeric, null::text, null::integer, null::numeric, null::integer,
      null::jsonb, null::jsonb, null::jsonb;
    return;
  end if;
  if v_context.outcome is not null then
    return query select v_context.outcome, v_context.app_id, v_context.end_user_id, v_context.developer_share_bps,
      null::numeric, null::numeric, null::text, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_context.feature_key, null::integer, null::numeric, null::integer,
      case when p_fallbacks is not null then v_context.model_aliases end,
      case when p_fallbacks is not null then v_context.fallback_models end, null::jsonb;
    return;
  end if;
  -- The names the steps below use.
  select v_context.app_id, v_context.end_user_id, v_context.developer_id, v_context.developer_share_bps into v_session;
  select v_context.limit_spend_per_day_usd, v_context.limit_spend_per_month_usd, v_context.limit_requests_per_minute into v_app;
  select v_context.feature_key, v_context.route_policy, v_context.developer_price_per_mtok_usd, v_context.open_fee_usd,
         v_context.max_output_tokens, v_context.model_aliases, v_context.fallback_models into v_feature;
  -- The output bound capped by the feature's max output tokens.
  v_bound_output := least(p_bound_output_tokens, coalesce(v_feature.max_output_tokens, p_bound_output_tokens));

  -- 3. The app's per-end-user limits (docs/gateway.md, "Per-end-user limits"); an app without any
  --    skips all of it. The end user's row is locked first, so one end user's authorizations run one
  --    after another and each counts every call, hold and booking committed before it (the lock does
  --    not conflict with the key-share locks a booking's inserts take, so bookings never wait on it).
  --    Requests per minute: a sliding 60 s window over the end user's authorized calls (a refused call
  --    has no route and does not count); over it, refused here, before anything is written.
  if v_app.limit_requests_per_minute is not null or v_app.limit_spend_per_day_usd is not null
     or v_app.limit_spend_per_month_usd is not null then
    perform 1 from end_users u where u.id = v_session.end_user_id for no key update;
  end if;
  if v_app.limit_requests_per_minute is not null then
    -- The window counts the call slots of the end user's wallet object too (its lease, active and
    -- unexpired): calls it may authorize, or has, whose records Postgres does not have yet.
    select count(*)::integer into v_recent from gateway_calls g
     where g.end_user_id = v_session.end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds';
    select coalesce(sum(h.call_slots), 0)::integer into v_slots from end_users e join balance_holds h on h.request_id = 'lease:' || e.wallet_object
     where e.id = v_session.end_user_id and h.status = 'active' and h.expires_at > now();
    v_recent := v_recent + v_slots;
    if v_recent >= v_app.limit_requests_per_minute then
      -- A call is allowed again once the window holds one call fewer than the limit. At most 60 s: a
      -- call of a transaction that began after this one committed first can be later than now().
      select least(ceil(extract(epoch from g.created_at + interval '60 seconds' - now())), 60)::integer into v_retry_after
        from gateway_calls g
       where g.end_user_id = v_session.end_user_id and g.route_mode is not null and g.created_at > now() - interval '60 seconds'
       order by g.created_at offset v_recent - v_app.limit_requests_per_minute limit 1;
      -- None when the object's slots are what fill the window: they are given back within its flush
      -- or its idle release, at the latest as its calls leave the window (60 s).
      return query select 'rate_limited'::text, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
        null::numeric, null::numeric, null::text, null::uuid, null::text, null::text, null::integer, null::numeric,
        v_feature.feature_key::text, null::integer, v_app.limit_requests_per_minute::numeric,
        greatest(coalesce(v_retry_after, case when v_slots > 0 then 60 else 1 end), 1),
        null::jsonb, null::jsonb, null::jsonb;
      return;
    end if;
  end if;

  -- 4. The idempotency claim and the durable record of the call (route filled in below), with the
  --    prices, settings and fallbacks it is authorized with: a later change never reprices it.
  insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key,
                             provider, model, bound_input_tokens, bound_output_tokens, deadline_at,
                             developer_price_per_mtok_usd, open_fee_usd, developer_share_bps, platform_markup_bps, platform_fee_bps,
                             fallback_models)
  values (p_call_id, p_money_key, p_client_request_id, p_fingerprint, v_session.app_id, v_session.end_user_id,
          v_feature.feature_key, p_provider, p_model, p_bound_input_tokens, v_bound_output,
          now() + make_interval(secs => p_max_duration_seconds),
          v_feature.developer_price_per_mtok_usd, v_feature.open_fee_usd, v_session.developer_share_bps,
          p_platform_markup_bps, p_platform_fee_bps,
          -- The fallbacks the hold was sized over (equal to the feature's, checked above): a call left
          -- unsettled is swept at the costliest of its candidates (migration 0018).
          p_fallbacks)
  on conflict (end_user_id, client_request_id) where status <> 'abandoned' do nothing;
  if not found then
    return query select 'conflict'::text, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
      null::numeric, null::numeric, null::text, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_feature.feature_key::text, null::integer, null::numeric, null::integer, null::jsonb, null::jsonb, null::jsonb;
    return;
  end if;

  -- 5. The route (DESIGN §6): the user's BYOK key when asked for or the feature puts it first; else
  --    the developer's key within its monthly budget; else the platform pool.
  if p_requested_route = 'byok' or (p_requested_route is null and v_feature.route_policy = 'byok_first') then
    select k.id, k.ciphertext, k.iv, k.key_version into v_key from provider_credentials k
     where k.owner_type = 'end_user' and k.end_user_id = v_session.end_user_id and k.provider = p_provider and k.status = 'active'
     order by k.created_at desc limit 1;
    if found then
      v_route := 'byok';
      v_hold := coalesce(v_feature.open_fee_usd, 0);
    elsif p_requested_route = 'byok' then
      v_outcome := 'byok_missing';
    end if;
  end if;

  if v_route is null and v_outcome is null and (p_requested_route is null or p_requested_route = 'developer_key') then
    select k.id, k.ciphertext, k.iv, k.key_version into v_key from provider_credentials k
     where k.owner_type = 'developer' and k.developer_id = v_session.developer_id and k.provider = p_provider and k.status = 'active'
     order by k.created_at desc limit 1;
    if not found then
      if p_requested_route = 'developer_key' then v_outcome := 'developer_key_missing'; end if;
    elsif p_catalog_cost is null and (p_provider <> 'custom' or v_feature.developer_price_per_mtok_usd is null) then
      -- No catalog price: the call's cost cannot be counted against the key's budget.
      if p_requested_route = 'developer_key' then v_outcome := 'unpriced'; end if;
    else
      -- A developer's own custom server (never in the catalog) is served when the feature sets its
      -- price: the end user is held and charged that price; the server's cost is unknown to Faucet,
      -- so it reserves 0 of the key's budget (the booking records an upstream cost of 0).
      v_budget := faucet_reserve_credential_budget(v_key.id, p_money_key, coalesce(p_catalog_cost, 0));
      if v_budget = 'reserved' then
        v_route := 'developer_key';
        v_hold := coalesce(faucet_developer_price(v_feature.developer_price_per_mtok_usd, p_bound_input_tokens::bigint + v_bound_output),
                           p_catalog_cost);
      elsif p_requested_route = 'developer_key' then
        v_outcome := case v_budget when 'budget_exceeded' then 'budget_exceeded' else 'developer_key_missing' end;
      end if;
      -- Past its budget (asked for nothing): fall back to the platform pool.
    end if;
  end if;

  if v_route is null and v_outcome is null then
    if p_platform_hold is null then
      v_outcome := 'unpriced';
    elsif not p_pool_available then
      v_outcome := 'no_pool';
    else
      v_route := 'platform';
      v_hold := p_platform_hold;
    end if;
  end if;

  -- 6. The spend limits: retail booked to the end user this UTC day / month (usage of any route), plus
  --    the worst case of each of their calls in flight — its hold, which on every route is the call's
  --    worst-case retail (0 exactly when the route can charge nothing: byok/local without an open fee,
  --    a developer price of 0) — plus their wallet object's lease (active, unexpired: what it may
  --    spend without asking, faucet_settle_lease caps it by the same limits) plus this call's worst
  --    case must stay within each limit. One
  --    statement, so one snapshot: a booking that commits meanwhile is counted once, as usage or as
  --    its hold. A call that can charge nothing is never refused by a spend limit.
  if v_outcome is null and v_hold > 0
     and (v_app.limit_spend_per_day_usd is not null or v_app.limit_spend_per_month_usd is not null) then
    select coalesce(sum(u.retail_usd) filter (where u.created_at >= date_trunc('day', now(), 'UTC')), 0),
           coalesce(sum(u.retail_usd), 0),
           (select coalesce(sum(h.amount), 0) from gateway_calls g join balance_holds h on h.request_id = g.money_key
             where g.end_user_id = v_session.end_user_id and g.status = 'in_flight')
           + (select coalesce(sum(h.amount), 0) from end_users e join balance_holds h on h.request_id = 'lease:' || e.wallet_object
               where e.id = v_session.end_user_id and h.status = 'active' and h.expires_at > now())
      into v_spent_day, v_spent_month, v_in_flight
      from usage_events u
     where u.end_user_id = v_session.end_user_id
       and u.created_at >= case when v_app.limit_spend_per_month_usd is null then date_trunc('day', now(), 'UTC')
                                else faucet_month_start(now()) end;
    -- The month first: when both are reached, the one that lasts longer is the one to name.
    if v_spent_month + v_in_flight + v_hold > v_app.limit_spend_per_month_usd then
      v_outcome := 'spend_limit_month';
      v_refused_limit := v_app.limit_spend_per_month_usd;
    elsif v_spent_day + v_in_flight + v_hold > v_app.limit_spend_per_day_usd then
      v_outcome := 'spend_limit_day';
      v_refused_limit := v_app.limit_spend_per_day_usd;
    end if;
  end if;

  -- 7. The hold of the route's worst case against the user's available balance.
  if v_outcome is null and v_hold > 0 then
    if (select h.outcome from faucet_reserve_hold(v_session.end_user_id, p_money_key, v_hold, p_hold_ttl_seconds) h) <> 'reserved' then
      v_outcome := 'insufficient_balance';
    end if;
  end if;

  if v_outcome is not null then
    perform faucet_abandon_call(p_money_key);
    return query select v_outcome, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
      null::numeric, null::numeric, v_route, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_feature.feature_key::text, null::integer, v_refused_limit::numeric(20, 8), null::integer, null::jsonb, null::jsonb, null::jsonb;
    return;
  end if;

  update gateway_calls set route_mode = v_route, provider_credential_id = case when v_route = 'platform' then null else v_key.id end
   where id = p_call_id;
  return query select 'authorized'::text, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
    v_feature.developer_price_per_mtok_usd::numeric(20, 8), v_feature.open_fee_usd::numeric(20, 8), v_route,
    case when v_route = 'platform' then null else v_key.id end,
    case when v_route = 'platform' then null else v_key.ciphertext end,
    case when v_route = 'platform' then null else v_key.iv end,
    case when v_route = 'platform' then null else v_key.key_version end,
    v_hold::numeric(20, 8), v_feature.feature_key::text, v_feature.max_output_tokens::integer, null::numeric, null::integer,
    case when p_fallbacks is not null then v_feature.model_aliases end,
    case when p_fallbacks is not null then v_feature.fallback_models end,
    -- On the byok route the end user's keys of the other fallback providers.
    case when v_route = 'byok' and p_fallbacks is not null then faucet_byok_fallback_keys(v_session.end_user_id, p_provider, p_fallbacks) end;
end
$$;
