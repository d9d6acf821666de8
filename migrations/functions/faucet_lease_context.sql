-- The current definition of faucet_lease_context (migrations/README.md: edit it here; the runner re-applies a changed file).
-- May the calls of this session be authorized by the end user's wallet object against its lease
-- (docs/edge.md), with no statement of their own? Read-only: it writes nothing (no claim,
-- no call record, no hold, no budget reservation).
--
-- It runs the checks of faucet_authorize_call's steps 1–2 (faucet_call_context, the one definition
-- both use) and the route choice of its step 5 without its side effects. outcome:
--   leasable  the call would take
--             - the byok route (asked for, or the feature puts it first, and the end user has an
--               active key of the provider): route_mode 'byok' with that key — id, ciphertext, iv,
--               key_version, its registered root — and, when p_fallbacks is given, their key of each
--               other fallback provider, as faucet_authorize_call answers them;
--             - else the developer_key route (asked for, or nothing asked for, and the app's developer
--               has an active key of the provider, the call's worst-case upstream cost p_catalog_cost
--               known — or a custom server's model at the feature's developer price, which reserves
--               0): route_mode 'developer_key' with that key and its root. Whether the key's monthly
--               budget has room is not decided here: the wallet object leases part of that budget
--               (faucet_settle_lease's p_budgets), and a call its budget lease cannot cover takes the
--               per-call path, which falls back to the platform route or refuses as it always has;
--             - else the platform route (a platform price known, the pool available);
--             the app's per-end-user limits cap the lease instead (faucet_settle_lease);
--   database  anything else that is not a refusal: byok or developer_key asked for without a key, a
--             developer key with no catalog price, an unpriced model, no pool. The gateway then
--             takes the per-call path (faucet_authorize_call), which gives the exact answer (a
--             refusal included);
--   or the refusals of faucet_call_context ('unauthorized', 'developer_suspended', 'app_archived',
--   'no_default_feature', 'unknown_feature', 'feature_archived', 'routing_changed', 'model_not_allowed').
-- The columns are filled in as faucet_authorize_call fills them for the same outcome; model_aliases
-- and fallback_models only when p_fallbacks is not null; wallet_id and session_expires_at on
-- 'leasable' and 'database' (the wallet is created on first use by the per-call path, so it may be
-- null for an end user who never had one).
create or replace function faucet_lease_context(
  p_token_hash text,
  -- null: the app's default feature
  p_feature_key text,
  p_provider text,
  p_model text,
  -- 'platform' | 'developer_key' | 'byok' | null (the gateway chooses)
  p_requested_route text,
  -- Worst-case retail on the platform route; null when the model has no catalog price.
  p_platform_hold numeric,
  p_pool_available boolean,
  p_alias text default null,
  p_fallbacks jsonb default null,
  -- The call's worst-case upstream cost at catalog price (faucet_authorize_call's p_catalog_cost);
  -- null when unpriced.
  p_catalog_cost numeric default null
) returns table (
  outcome text,
  app_id uuid,
  end_user_id uuid,
  wallet_id uuid,
  developer_share_bps integer,
  developer_price_per_mtok_usd numeric,
  open_fee_usd numeric,
  feature_key text,
  max_output_tokens integer,
  model_aliases jsonb,
  fallback_models jsonb,
  session_expires_at timestamptz,
  -- On 'leasable': 'platform', 'byok' or 'developer_key'; on the last two the route's key and its
  -- root, on 'byok' the end user's fallback keys.
  route_mode text,
  credential_id uuid,
  ciphertext text,
  iv text,
  key_version integer,
  base_url text,
  fallback_keys jsonb
)
language plpgsql stable as $$
#variable_conflict use_column
declare
  v_context record;
  v_outcome text;
  v_key record;
  v_route text;
begin
  select null::uuid as id, null::text as ciphertext, null::text as iv, null::integer as key_version, null::text as base_url into v_key;
  select * into v_context from faucet_call_context(p_token_hash, p_feature_key, p_provider, p_model, p_alias, p_fallbacks);
  if v_context.outcome in ('unauthorized', 'developer_suspended') then
    return query select v_context.outcome, null::uuid, null::uuid, null::uuid, null::integer, null::numeric, null::numeric,
      null::text, null::integer, null::jsonb, null::jsonb, null::timestamptz,
      null::text, null::uuid, null::text, null::text, null::integer, null::text, null::jsonb;
    return;
  end if;
  if v_context.outcome is not null then
    return query select v_context.outcome, v_context.app_id, v_context.end_user_id, null::uuid, v_context.developer_share_bps,
      null::numeric, null::numeric, v_context.feature_key, null::integer,
      case when p_fallbacks is not null then v_context.model_aliases end,
      case when p_fallbacks is not null then v_context.fallback_models end, null::timestamptz,
      null::text, null::uuid, null::text, null::text, null::integer, null::text, null::jsonb;
    return;
  end if;

  -- The route of faucet_authorize_call's step 5, read-only: the end user's byok key when asked for or
  -- the feature puts it first (the same key that step takes); else the developer's key when that step
  -- would try it, without its budget reservation.
  if p_requested_route = 'byok' or (p_requested_route is null and v_context.route_policy = 'byok_first') then
    select k.id, k.ciphertext, k.iv, k.key_version, k.base_url into v_key from provider_credentials k
     where k.owner_type = 'end_user' and k.end_user_id = v_context.end_user_id and k.provider = p_provider and k.status = 'active'
     order by k.created_at desc limit 1;
    if v_key.id is not null then
      v_route := 'byok';
    end if;
  end if;
  if v_route is null and (p_requested_route is null or p_requested_route = 'developer_key') then
    select k.id, k.ciphertext, k.iv, k.key_version, k.base_url into v_key from provider_credentials k
     where k.owner_type = 'developer' and k.developer_id = v_context.developer_id and k.provider = p_provider and k.status = 'active'
     order by k.created_at desc limit 1;
    if v_key.id is not null and p_catalog_cost is null
       and (p_provider <> 'custom' or v_context.developer_price_per_mtok_usd is null) then
      -- A key the call cannot use (its cost cannot be counted against the budget, nor is it a custom
      -- server's at the feature's price): the per-call path decides. Answered without the key.
      v_outcome := 'database';
      select null::uuid as id, null::text as ciphertext, null::text as iv, null::integer as key_version, null::text as base_url
        into v_key;
    elsif v_key.id is not null then
      v_route := 'developer_key';
    end if;
  end if;
  v_outcome := coalesce(v_outcome, case
    when v_route is not null then 'leasable'
    when p_requested_route is not null and p_requested_route <> 'platform' then 'database'
    when p_platform_hold is null or p_pool_available is not true then 'database'
    else 'leasable'
  end);
  return query select v_outcome, v_context.app_id, v_context.end_user_id,
    (select w.id from wallets w where w.end_user_id = v_context.end_user_id),
    v_context.developer_share_bps, v_context.developer_price_per_mtok_usd::numeric(20, 8),
    v_context.open_fee_usd::numeric(20, 8), v_context.feature_key, v_context.max_output_tokens,
    case when p_fallbacks is not null then v_context.model_aliases end,
    case when p_fallbacks is not null then v_context.fallback_models end,
    v_context.session_expires_at,
    case when v_outcome = 'leasable' then coalesce(v_route, 'platform') end,
    v_key.id, v_key.ciphertext, v_key.iv, v_key.key_version, v_key.base_url,
    -- On the byok route the end user's keys of the other fallback providers (faucet_authorize_call's answer).
    case when v_route = 'byok' and p_fallbacks is not null then faucet_byok_fallback_keys(v_context.end_user_id, p_provider, p_fallbacks) end;
end
$$;
