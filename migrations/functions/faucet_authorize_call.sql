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
  -- when the feature has no developer price; null when unpriced.
  p_catalog_cost numeric,
  p_pool_available boolean,
  p_hold_ttl_seconds integer,
  p_max_duration_seconds integer
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
  max_output_tokens integer
)
language plpgsql as $$
#variable_conflict use_column
declare
  v_session record;
  v_app record;
  v_feature record;
  v_bound_output integer;
  v_key record;
  v_route text;
  v_hold numeric := 0;
  v_budget text;
  v_outcome text;
begin
  select null::uuid as id, null::text as ciphertext, null::text as iv, null::integer as key_version into v_key;
  select null::text as feature_key, null::jsonb as allowed_models, null::timestamptz as archived_at into v_feature;

  -- 1. The session: live, not revoked; its app's developer not suspended (docs/developers.md).
  select s.app_id, s.end_user_id, a.developer_id, a.developer_share_bps, d.suspended_at into v_session
    from virtual_sessions s join apps a on a.id = s.app_id join developers d on d.id = a.developer_id
   where s.token_hash = p_token_hash and s.expires_at > now() and s.revoked_at is null;
  if not found or v_session.suspended_at is not null then
    return query select (case when found then 'developer_suspended' else 'unauthorized' end)::text, null::uuid, null::uuid, null::integer, null::numeric, null::numeric,
      null::text, null::uuid, null::text, null::text, null::integer, null::numeric, null::text, null::integer;
    return;
  end if;

  -- 2. The app (not archived) and the feature the call names, or the app's default feature; the
  --    feature not archived, the model among its allowed models (an empty list allows any), and the
  --    output bound capped by the feature's max output tokens.
  select a.archived_at, a.default_feature_key into v_app from apps a where a.id = v_session.app_id;
  if v_app.archived_at is null then
    select f.feature_key, f.route_policy, f.developer_price_per_mtok_usd, f.open_fee_usd, f.allowed_models,
           f.max_output_tokens, f.archived_at into v_feature
      from app_features f where f.app_id = v_session.app_id and f.feature_key = coalesce(p_feature_key, v_app.default_feature_key);
  end if;
  v_outcome := case
    when v_app.archived_at is not null then 'app_archived'
    when v_feature.feature_key is null and p_feature_key is null then 'no_default_feature'
    when v_feature.feature_key is null then 'unknown_feature'
    when v_feature.archived_at is not null then 'feature_archived'
    when jsonb_array_length(v_feature.allowed_models) > 0 and not v_feature.allowed_models ? (p_provider || ':' || p_model)
      then 'model_not_allowed'
  end;
  if v_outcome is not null then
    return query select v_outcome, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
      null::numeric, null::numeric, null::text, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_feature.feature_key::text, null::integer;
    return;
  end if;
  v_bound_output := least(p_bound_output_tokens, coalesce(v_feature.max_output_tokens, p_bound_output_tokens));

  -- 3. The idempotency claim and the durable record of the call (route filled in below).
  insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key,
                             provider, model, bound_input_tokens, bound_output_tokens, deadline_at)
  values (p_call_id, p_money_key, p_client_request_id, p_fingerprint, v_session.app_id, v_session.end_user_id,
          v_feature.feature_key, p_provider, p_model, p_bound_input_tokens, v_bound_output,
          now() + make_interval(secs => p_max_duration_seconds))
  on conflict (end_user_id, client_request_id) where status <> 'abandoned' do nothing;
  if not found then
    return query select 'conflict'::text, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
      null::numeric, null::numeric, null::text, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_feature.feature_key::text, null::integer;
    return;
  end if;

  -- 4. The route (DESIGN §6): the user's BYOK key when asked for or the feature puts it first; else
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
    elsif p_catalog_cost is null then
      -- No catalog price: the call's cost cannot be counted against the key's budget.
      if p_requested_route = 'developer_key' then v_outcome := 'unpriced'; end if;
    else
      v_budget := faucet_reserve_credential_budget(v_key.id, p_money_key, p_catalog_cost);
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

  -- 5. The hold of the route's worst case against the user's available balance.
  if v_outcome is null and v_hold > 0 then
    if (select h.outcome from faucet_reserve_hold(v_session.end_user_id, p_money_key, v_hold, p_hold_ttl_seconds) h) <> 'reserved' then
      v_outcome := 'insufficient_balance';
    end if;
  end if;

  if v_outcome is not null then
    perform faucet_abandon_call(p_money_key);
    return query select v_outcome, v_session.app_id, v_session.end_user_id, v_session.developer_share_bps,
      null::numeric, null::numeric, v_route, null::uuid, null::text, null::text, null::integer, null::numeric,
      v_feature.feature_key::text, null::integer;
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
    v_hold::numeric(20, 8), v_feature.feature_key::text, v_feature.max_output_tokens::integer;
end
$$;
