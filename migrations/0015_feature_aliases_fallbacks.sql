-- Model aliases and fallback models per feature (issue 16, docs/models.md "Fallback and aliases").
-- model_aliases: alias name -> "provider:model" (e.g. {"fast": "openai:gpt-4o-mini"}): a call's
-- `model` may name an alias of its feature, so a developer switches models without a client update.
-- fallback_models: an ordered list of "provider:model" the gateway tries, in order, when the model
-- asked for fails before its first byte. Both are checked by the API (workers/shared/apps/feature-settings.ts).
-- faucet_authorize_call takes the aliases and fallbacks the gateway sized its hold with and refuses
-- ('routing_changed') when the feature's differ, so a hold always covers every candidate tried.
-- Idempotent.

alter table app_features add column if not exists model_aliases jsonb not null default '{}';
alter table app_features add column if not exists fallback_models jsonb not null default '[]';
do $$ begin
  alter table app_features add constraint app_features_model_aliases check (jsonb_typeof(model_aliases) = 'object');
exception when duplicate_object then null;
end $$;
do $$ begin
  alter table app_features add constraint app_features_fallback_models check (
    jsonb_typeof(fallback_models) = 'array' and jsonb_array_length(fallback_models) <= 3);
exception when duplicate_object then null;
end $$;

-- faucet_authorize_call takes the alias and the fallbacks of the call and answers the feature's
-- aliases, fallbacks and the BYOK keys of fallback providers (a new signature and return type).
drop function if exists faucet_authorize_call(text, text, uuid, text, text, text, text, text, text, integer, integer, numeric,
  numeric, boolean, integer, integer, integer, integer);
