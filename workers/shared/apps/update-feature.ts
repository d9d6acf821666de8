/**
 * Change a feature's settings, with its audit row (`feature.updated`, `before`/`after`) in the same
 * statement. Fields not given keep their value; `default_model ∈ allowed_models` (when the list is not
 * empty) is checked on the merged row. A price change applies to calls authorized after it: the
 * gateway reads the prices when it authorizes a call and each booking records the ones it used
 * (`feature_pricing` in its ledger metadata). An archived feature, or any feature of an archived app,
 * takes no change (`invalid_state`). A change to nothing writes no audit row.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { defaultModelRule, type FeatureSettingsInput, parseFeatureSettings } from './feature-settings.ts';
import { featureAuditSql } from './feature-view.ts';
import { routingModelsRule } from './model-routing.ts';

export interface UpdateFeatureInput {
  developerId: string;
  publicAppId: string;
  featureKey: string;
  changes: FeatureSettingsInput;
  actor: AuditActor;
  requestId: string | null;
}

/** `case when <given> then <new> else <current> end`: a field not given keeps its value. */
const merged = (value: unknown, cast: string, column: string) =>
  sql`case when ${value !== undefined}::boolean then ${value ?? null}${sql.raw(cast)} else cur.${sql.raw(column)} end`;

const columns = [
  'name',
  'default_model',
  'allowed_models',
  'route_policy',
  'developer_price_per_mtok_usd',
  'open_fee_usd',
  'max_output_tokens',
  'model_aliases',
  'fallback_models',
] as const;

export async function updateFeature(db: SqlDatabase, input: UpdateFeatureInput): Promise<void> {
  const settings = parseFeatureSettings(input.changes);
  if (Object.values(settings).every((value) => value === undefined)) {
    throw new FaucetError('invalid_request', 'Nothing to change: give at least one setting');
  }
  const allowed = settings.allowedModels === undefined ? undefined : JSON.stringify(settings.allowedModels);
  const aliases = settings.modelAliases === undefined ? undefined : JSON.stringify(settings.modelAliases);
  const fallbacks = settings.fallbackModels === undefined ? undefined : JSON.stringify(settings.fallbackModels);
  const list = (alias: string) => sql.raw(columns.map((column) => `${alias}.${column}`).join(', '));
  const row = await queryOne<{
    app_found: boolean;
    app_archived: boolean;
    found: boolean;
    archived: boolean;
    models_ok: boolean;
    routing_ok: boolean;
  }>(
    db,
    sql`with app as (
          select a.* from apps a where a.public_app_id = ${input.publicAppId} and a.developer_id = ${input.developerId}::uuid
             for update),
        cur as (
          select f.* from app_features f join app on f.app_id = app.id where f.feature_key = ${input.featureKey}
             for update of f),
        next as (
          select cur.id,
                 ${merged(settings.name, '::text', 'name')} as name,
                 ${merged(settings.defaultModel, '::text', 'default_model')} as default_model,
                 ${merged(allowed, '::jsonb', 'allowed_models')} as allowed_models,
                 ${merged(settings.routePolicy, '::text', 'route_policy')} as route_policy,
                 ${merged(settings.developerPricePerMtokUsd, '::numeric', 'developer_price_per_mtok_usd')} as developer_price_per_mtok_usd,
                 ${merged(settings.openFeeUsd, '::numeric', 'open_fee_usd')} as open_fee_usd,
                 ${merged(settings.maxOutputTokens, '::integer', 'max_output_tokens')} as max_output_tokens,
                 ${merged(aliases, '::jsonb', 'model_aliases')} as model_aliases,
                 ${merged(fallbacks, '::jsonb', 'fallback_models')} as fallback_models
            from cur),
        checked as (
          select next.*, jsonb_array_length(next.allowed_models) = 0 or next.allowed_models ? next.default_model as models_ok,
                 jsonb_array_length(next.allowed_models) = 0
                   or (select bool_and(next.allowed_models ? m) from (
                         select jsonb_array_elements_text(next.fallback_models) m
                         union all select value from jsonb_each_text(next.model_aliases)) t) is not false as routing_ok
            from next),
        updated as (
          update app_features f
             set name = n.name, default_model = n.default_model, allowed_models = n.allowed_models, route_policy = n.route_policy,
                 developer_price_per_mtok_usd = n.developer_price_per_mtok_usd, open_fee_usd = n.open_fee_usd,
                 max_output_tokens = n.max_output_tokens, model_aliases = n.model_aliases, fallback_models = n.fallback_models,
                 updated_at = now()
            from checked n, cur, app
           where f.id = n.id and n.models_ok and n.routing_ok and app.archived_at is null and cur.archived_at is null
             and (${list('n')}) is distinct from (${list('cur')})
          returning f.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'feature.updated', 'app_feature', app.public_app_id || '/' || u.feature_key,
                 ${input.requestId}, jsonb_build_object('before', ${featureAuditSql('cur')}, 'after', ${featureAuditSql('u')})
            from updated u, cur, app)
        select exists (select 1 from app) as app_found,
               coalesce((select archived_at is not null from app), false) as app_archived,
               exists (select 1 from cur) as found,
               coalesce((select archived_at is not null from cur), false) as archived,
               coalesce((select models_ok from checked), true) as models_ok,
               coalesce((select routing_ok from checked), true) as routing_ok`,
  );
  if (!row.app_found) throw new FaucetError('not_found', 'Unknown app');
  if (!row.found) throw new FaucetError('not_found', 'Unknown feature');
  if (row.app_archived) throw new FaucetError('invalid_state', 'This app is archived: its features take no changes');
  if (row.archived) throw new FaucetError('invalid_state', 'This feature is archived: it takes no changes');
  if (!row.models_ok) throw new FaucetError('invalid_request', defaultModelRule);
  if (!row.routing_ok) throw new FaucetError('invalid_request', routingModelsRule);
}
