/**
 * Features of an app (docs/developers.md): what a call names (or gets as its app's default), its
 * models, route policy and prices. Prices are 8-digit decimal strings, parsed by the money module
 * before they reach here and stored as numeric; a change applies to calls authorized after it
 * (`faucet_authorize_call` reads the row; each booking stores the prices it used). Archived, never
 * deleted. Every change writes its audit row in the same statement.
 */
import { FaucetError } from '../wire/errors.ts';
import { findOwnedApp } from './apps.ts';
import type { AuditActor, Queryable } from './queryable.ts';

export interface FeatureSettings {
  name: string;
  default_model: string;
  allowed_models: string[];
  route_policy: 'platform_first' | 'byok_first';
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string;
  max_output_tokens: number | null;
}

export interface FeatureView extends FeatureSettings {
  feature_key: string;
  is_default: boolean;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
}

const featureColumns = `f.feature_key, f.name, f.default_model, f.allowed_models, f.route_policy,
  f.developer_price_per_mtok_usd::text as developer_price, f.open_fee_usd::text as open_fee, f.max_output_tokens,
  f.created_at, f.updated_at, f.archived_at`;

const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());

function featureView(row: Record<string, unknown>, defaultKey: string | null): FeatureView {
  return {
    feature_key: row.feature_key as string,
    name: row.name as string,
    default_model: row.default_model as string,
    allowed_models: row.allowed_models as string[],
    route_policy: row.route_policy as FeatureSettings['route_policy'],
    developer_price_per_mtok_usd: row.developer_price as string | null,
    open_fee_usd: row.open_fee as string,
    max_output_tokens: row.max_output_tokens as number | null,
    is_default: row.feature_key === defaultKey,
    created_at: iso(row.created_at) as string,
    updated_at: iso(row.updated_at) as string,
    archived_at: iso(row.archived_at),
  };
}

function checkModels(settings: Pick<FeatureSettings, 'default_model' | 'allowed_models'>): void {
  if (settings.allowed_models.length > 0 && !settings.allowed_models.includes(settings.default_model)) {
    throw new FaucetError('invalid_request', 'default_model must be one of allowed_models when allowed_models is not empty.');
  }
}

/** Creates a feature; the app's first live feature becomes its default (so calls without `feature` work). */
export async function createFeature(
  db: Queryable,
  developerId: string,
  actor: AuditActor,
  publicAppId: string,
  input: FeatureSettings & { feature_key: string },
): Promise<FeatureView> {
  const app = await findOwnedApp(db, developerId, publicAppId);
  if (app.view.archived_at !== null) throw new FaucetError('invalid_state', 'This app is archived: it takes no new features.');
  checkModels(input);
  const { rows } = await db.query(
    `with f as (
       insert into app_features (app_id, feature_key, name, default_model, allowed_models, route_policy,
                                 developer_price_per_mtok_usd, open_fee_usd, max_output_tokens)
       values ($1, $2, $3, $4, $5::jsonb, $6, $7::numeric, $8::numeric, $9::integer)
       on conflict (app_id, feature_key) do nothing returning *),
     d as (update apps set default_feature_key = f.feature_key from f where apps.id = $1 and apps.default_feature_key is null
           returning apps.default_feature_key),
     audit as (
       insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
       select $10, $11, 'feature.created', 'app_feature', $12 || '/' || f.feature_key, $13,
              jsonb_build_object('after', to_jsonb(f) - 'app_id' - 'id', 'made_default', exists (select 1 from d)) from f)
     select ${featureColumns}, coalesce((select default_feature_key from d), $14) as default_key from f`,
    [
      app.id,
      input.feature_key,
      input.name,
      input.default_model,
      JSON.stringify(input.allowed_models),
      input.route_policy,
      input.developer_price_per_mtok_usd,
      input.open_fee_usd,
      input.max_output_tokens,
      actor.type,
      actor.id,
      publicAppId,
      actor.requestId,
      app.view.default_feature_key,
    ],
  );
  const row = rows[0];
  if (!row) throw new FaucetError('conflict', `This app already has a feature "${input.feature_key}".`);
  return featureView(row, row.default_key as string | null);
}
