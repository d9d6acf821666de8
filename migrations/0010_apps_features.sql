-- Apps and features managed by their developer (docs/developers.md): an app is archived, never
-- deleted (ledger rows reference it), names a default feature (a call without `feature` uses it) and
-- stores per-end-user limits; a feature lists its allowed models, caps its output tokens and is
-- archived like its app. Idempotent: `if not exists` and duplicate constraints ignored.

alter table apps add column if not exists archived_at timestamptz;
alter table apps add column if not exists default_feature_key text;
alter table apps add column if not exists limit_spend_per_day_usd numeric(20, 8);
alter table apps add column if not exists limit_spend_per_month_usd numeric(20, 8);
alter table apps add column if not exists limit_requests_per_minute integer;
do $$ begin
  alter table apps add constraint apps_limits_positive check (
    (limit_spend_per_day_usd is null or limit_spend_per_day_usd > 0)
    and (limit_spend_per_month_usd is null or limit_spend_per_month_usd > 0)
    and (limit_requests_per_minute is null or limit_requests_per_minute > 0));
exception when duplicate_object then null;
end $$;

alter table app_features add column if not exists allowed_models jsonb not null default '[]';
alter table app_features add column if not exists max_output_tokens integer;
alter table app_features add column if not exists archived_at timestamptz;
alter table app_features add column if not exists updated_at timestamptz not null default now();
do $$ begin
  alter table app_features add constraint app_features_route_policy check (route_policy in ('platform_first', 'byok_first'));
exception when duplicate_object then null;
end $$;
do $$ begin
  alter table app_features add constraint app_features_max_output_tokens check (max_output_tokens is null or max_output_tokens > 0);
exception when duplicate_object then null;
end $$;

-- Apps that existed before: their first feature becomes the default.
update apps a set default_feature_key = (
  select f.feature_key from app_features f where f.app_id = a.id order by f.created_at, f.feature_key limit 1)
 where a.default_feature_key is null;

-- faucet_authorize_call now also answers the feature it used and its output cap (a new return type).
drop function if exists faucet_authorize_call(text, text, uuid, text, text, text, text, text, text, integer, integer, numeric,
  numeric, boolean, integer, integer);
