/**
 * Create a feature of an app, with its audit row (`feature.created`, `after`), in one statement. The
 * app's first feature becomes its default (so calls without `feature` work; the audit row says
 * `made_default`). A key is never reused, archived or not: usage records name features by key. An
 * archived app takes no new feature. The API and the demo seed both call this. The cap on live
 * features (100 per app) is the `app_features` trigger's (migrations/functions/faucet_cap_live_rows.sql):
 * a creation past it is refused as 409 `conflict`, also under a race, with nothing written.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { defaultModelRule, type FeatureSettingsInput, parseFeatureSettings } from './feature-settings.ts';
import { featureAuditSql } from './feature-view.ts';
import { routingModelsAllowed, routingModelsRule } from './model-routing.ts';
import { featureKey as checkFeatureKey } from './names.ts';

export interface CreateFeatureInput {
  developerId: string;
  publicAppId: string;
  feature: FeatureSettingsInput & { feature_key: string; name: string; default_model: string };
  actor: AuditActor;
  requestId: string | null;
}

export async function createFeature(db: SqlDatabase, input: CreateFeatureInput): Promise<{ featureKey: string }> {
  const key = checkFeatureKey(input.feature.feature_key);
  const settings = parseFeatureSettings(input.feature);
  const allowedModels = settings.allowedModels ?? [];
  // Both given (the input type requires them), so parsed.
  const name = settings.name as string;
  const defaultModel = settings.defaultModel as string;
  if (allowedModels.length > 0 && !allowedModels.includes(defaultModel)) throw new FaucetError('invalid_request', defaultModelRule);
  const aliases = settings.modelAliases ?? {};
  const fallbacks = settings.fallbackModels ?? [];
  if (!routingModelsAllowed(allowedModels, aliases, fallbacks)) throw new FaucetError('invalid_request', routingModelsRule);
  const row = await queryOne<{ found: boolean; archived: boolean; created: boolean }>(
    db,
    sql`with app as (
          select a.* from apps a where a.public_app_id = ${input.publicAppId} and a.developer_id = ${input.developerId}::uuid
             for update),
        f as (
          insert into app_features (app_id, feature_key, name, default_model, allowed_models, route_policy,
                                    developer_price_per_mtok_usd, open_fee_usd, max_output_tokens, model_aliases, fallback_models)
          select app.id, ${key}, ${name}, ${defaultModel}, ${JSON.stringify(allowedModels)}::jsonb,
                 ${settings.routePolicy ?? 'platform_first'}, ${settings.developerPricePerMtokUsd ?? null}::numeric,
                 ${settings.openFeeUsd ?? '0.00000000'}::numeric, ${settings.maxOutputTokens ?? null}::integer,
                 ${JSON.stringify(aliases)}::jsonb, ${JSON.stringify(fallbacks)}::jsonb
            from app
           where app.archived_at is null
          on conflict (app_id, feature_key) do nothing
          returning *),
        made_default as (
          update apps a set default_feature_key = f.feature_key from f, app
           where a.id = app.id and app.default_feature_key is null
          returning a.id),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'feature.created', 'app_feature', app.public_app_id || '/' || f.feature_key,
                 ${input.requestId},
                 jsonb_build_object('before', null, 'after', ${featureAuditSql('f')}, 'made_default', exists (select 1 from made_default))
            from f, app)
        select exists (select 1 from app) as found,
               coalesce((select archived_at is not null from app), false) as archived,
               exists (select 1 from f) as created`,
  );
  if (!row.found) throw new FaucetError('not_found', 'Unknown app');
  if (row.archived) throw new FaucetError('invalid_state', 'This app is archived: it takes no new features');
  if (row.created) return { featureKey: key };
  throw new FaucetError('conflict', `This app already has a feature "${key}" (archived or not; keys are never reused)`);
}
