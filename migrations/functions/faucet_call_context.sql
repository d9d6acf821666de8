-- The current definition of faucet_call_context (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The checks every gateway call passes before anything is decided about money, read-only: the
-- session (live, not revoked), its app's developer (not suspended), the app (not archived), the
-- feature the call names or the app's default (exists, not archived), the model (allowed by the
-- feature) and the gateway's view of the feature's routing (p_alias / p_fallbacks; null p_fallbacks:
-- not checked). One definition: faucet_lease_context answers it with the facts of a call (decideCall decides).
--
-- One row. outcome null: every check passed; otherwise the refusal: 'unauthorized',
-- 'developer_suspended' (then nothing else is filled in), 'app_archived', 'no_default_feature',
-- 'unknown_feature', 'feature_archived', 'routing_changed', 'model_not_allowed' (then the session's
-- app, end user and share, and the feature's key, aliases and fallbacks as far as they are known).
create or replace function faucet_call_context(
  p_token_hash text,
  p_feature_key text,
  p_provider text,
  p_model text,
  p_alias text,
  p_fallbacks jsonb
) returns table (
  outcome text,
  app_id uuid,
  end_user_id uuid,
  developer_id uuid,
  developer_share_bps integer,
  session_expires_at timestamptz,
  limit_spend_per_day_usd numeric,
  limit_spend_per_month_usd numeric,
  limit_requests_per_minute integer,
  feature_key text,
  route_policy text,
  developer_price_per_mtok_usd numeric,
  open_fee_usd numeric,
  max_output_tokens integer,
  model_aliases jsonb,
  fallback_models jsonb
)
language plpgsql stable as $$
#variable_conflict use_column
declare
  v_session record;
  v_app record;
  v_feature record;
  v_outcome text;
begin
  select null::text as feature_key, null::text as route_policy, null::numeric as developer_price_per_mtok_usd,
         null::numeric as open_fee_usd, null::jsonb as allowed_models, null::integer as max_output_tokens,
         null::timestamptz as archived_at, null::jsonb as model_aliases, null::jsonb as fallback_models into v_feature;

  -- 1. The session: live, not revoked; its app's developer not suspended (docs/developers.md).
  select s.app_id, s.end_user_id, s.expires_at, a.developer_id, a.developer_share_bps, d.suspended_at into v_session
    from virtual_sessions s join apps a on a.id = s.app_id join developers d on d.id = a.developer_id
   where s.token_hash = p_token_hash and s.expires_at > now() and s.revoked_at is null;
  if not found or v_session.suspended_at is not null then
    return query select (case when found then 'developer_suspended' else 'unauthorized' end)::text, null::uuid, null::uuid,
      null::uuid, null::integer, null::timestamptz, null::numeric, null::numeric, null::integer, null::text, null::text,
      null::numeric, null::numeric, null::integer, null::jsonb, null::jsonb;
    return;
  end if;

  -- 2. The app (not archived) and the feature the call names, or the app's default feature; the
  --    feature not archived, the model among its allowed models (an empty list allows any).
  select a.archived_at, a.default_feature_key, a.limit_spend_per_day_usd, a.limit_spend_per_month_usd,
         a.limit_requests_per_minute into v_app
    from apps a where a.id = v_session.app_id;
  if v_app.archived_at is null then
    select f.feature_key, f.route_policy, f.developer_price_per_mtok_usd, f.open_fee_usd, f.allowed_models,
           f.max_output_tokens, f.archived_at, f.model_aliases, f.fallback_models into v_feature
      from app_features f where f.app_id = v_session.app_id and f.feature_key = coalesce(p_feature_key, v_app.default_feature_key);
  end if;
  v_outcome := case
    when v_app.archived_at is not null then 'app_archived'
    when v_feature.feature_key is null and p_feature_key is null then 'no_default_feature'
    when v_feature.feature_key is null then 'unknown_feature'
    when v_feature.archived_at is not null then 'feature_archived'
    when p_fallbacks is not null and (v_feature.fallback_models <> p_fallbacks
      or (p_alias is not null and v_feature.model_aliases ->> p_alias is distinct from p_provider || ':' || p_model))
      then 'routing_changed'
    when jsonb_array_length(v_feature.allowed_models) > 0 and not v_feature.allowed_models ? (p_provider || ':' || p_model)
      then 'model_not_allowed'
  end;
  return query select v_outcome, v_session.app_id, v_session.end_user_id, v_session.developer_id,
    v_session.developer_share_bps, v_session.expires_at, v_app.limit_spend_per_day_usd::numeric,
    v_app.limit_spend_per_month_usd::numeric, v_app.limit_requests_per_minute::integer, v_feature.feature_key::text,
    v_feature.route_policy::text, v_feature.developer_price_per_mtok_usd::numeric, v_feature.open_fee_usd::numeric,
    v_feature.max_output_tokens::integer, v_feature.model_aliases, v_feature.fallback_models;
end
$$;
