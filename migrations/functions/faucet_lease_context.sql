-- The current definition of faucet_lease_context (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The facts a wallet object decides a call with (docs/edge.md; the decision is decideCall in
-- workers/shared/authorize/decide-call.ts), read-only: it writes nothing and chooses nothing.
--
-- outcome: 'leasable' when the checks of faucet_call_context passed (session, developer, app,
-- feature, model, routing), else its refusal ('unauthorized', 'developer_suspended', 'app_archived',
-- 'no_default_feature', 'unknown_feature', 'feature_archived', 'routing_changed', 'model_not_allowed').
-- On 'leasable': the feature's route policy, prices and output cap; the end user's active key of the
-- provider (user_key) and the app developer's (developer_key), each the newest, as
-- {id, ciphertext, iv, key_version, base_url} (still encrypted); with p_fallbacks, the end user's key
-- of each other fallback provider (fallback_keys, for the byok route). model_aliases and
-- fallback_models only when p_fallbacks is not null.
create or replace function faucet_lease_context(
  p_token_hash text,
  -- null: the app's default feature
  p_feature_key text,
  p_provider text,
  p_model text,
  p_alias text default null,
  p_fallbacks jsonb default null
) returns table (
  outcome text,
  app_id uuid,
  end_user_id uuid,
  developer_share_bps integer,
  developer_price_per_mtok_usd numeric,
  open_fee_usd numeric,
  feature_key text,
  max_output_tokens integer,
  model_aliases jsonb,
  fallback_models jsonb,
  session_expires_at timestamptz,
  route_policy text,
  user_key jsonb,
  developer_key jsonb,
  fallback_keys jsonb
)
-- PL/pgSQL, not SQL: a SQL function is inlined into the caller's statement and planned with it each
-- time (the wallet object's statements are unnamed); here the query's plan is kept per connection
-- (a context read took about 40% less time on a warm connection, docs/bench-history.md).
language plpgsql stable as $$
begin
  return query
  select coalesce(c.outcome, 'leasable'), c.app_id, c.end_user_id, c.developer_share_bps,
    case when c.outcome is null then c.developer_price_per_mtok_usd::numeric(20, 8) end,
    case when c.outcome is null then c.open_fee_usd::numeric(20, 8) end,
    c.feature_key,
    case when c.outcome is null then c.max_output_tokens end,
    case when p_fallbacks is not null then c.model_aliases end,
    case when p_fallbacks is not null then c.fallback_models end,
    case when c.outcome is null then c.session_expires_at end,
    case when c.outcome is null then c.route_policy end,
    (select jsonb_build_object('id', k.id, 'ciphertext', k.ciphertext, 'iv', k.iv, 'key_version', k.key_version, 'base_url', k.base_url)
       from provider_credentials k
      where c.outcome is null and k.owner_type = 'end_user' and k.end_user_id = c.end_user_id and k.provider = p_provider
        and k.status = 'active'
      order by k.created_at desc limit 1),
    (select jsonb_build_object('id', k.id, 'ciphertext', k.ciphertext, 'iv', k.iv, 'key_version', k.key_version, 'base_url', k.base_url)
       from provider_credentials k
      where c.outcome is null and k.owner_type = 'developer' and k.developer_id = c.developer_id and k.provider = p_provider
        and k.status = 'active'
      order by k.created_at desc limit 1),
    case when c.outcome is null and p_fallbacks is not null then faucet_byok_fallback_keys(c.end_user_id, p_provider, p_fallbacks) end
  from faucet_call_context(p_token_hash, p_feature_key, p_provider, p_model, p_alias, p_fallbacks) c;
end
$$;
