/**
 * What a developer sees of a feature: the builder's columns (row type from the schema), the wire
 * view (amounts as 8-digit strings, `is_default` from its app), the one read of an owned feature, and
 * the fields an audit row's `before`/`after` records.
 */
import { and, eq, sql } from 'drizzle-orm';
import { appFeatures, apps } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { formatUsd, parseDatabaseAmount } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';
import { routePolicySchema } from './feature-settings.ts';

export const featureColumns = {
  id: appFeatures.id,
  featureKey: appFeatures.featureKey,
  name: appFeatures.name,
  defaultModel: appFeatures.defaultModel,
  allowedModels: appFeatures.allowedModels,
  routePolicy: appFeatures.routePolicy,
  developerPricePerMtokUsd: appFeatures.developerPricePerMtokUsd,
  openFeeUsd: appFeatures.openFeeUsd,
  maxOutputTokens: appFeatures.maxOutputTokens,
  modelAliases: appFeatures.modelAliases,
  fallbackModels: appFeatures.fallbackModels,
  createdAt: appFeatures.createdAt,
  updatedAt: appFeatures.updatedAt,
  archivedAt: appFeatures.archivedAt,
};

export type FeatureRecord = Pick<typeof appFeatures.$inferSelect, keyof typeof featureColumns>;

export function toFeatureView(feature: FeatureRecord, appDefaultFeatureKey: string | null) {
  return {
    feature_key: feature.featureKey,
    name: feature.name,
    default_model: feature.defaultModel,
    allowed_models: feature.allowedModels,
    // The table's check constraint admits only the policies the schema lists.
    route_policy: routePolicySchema.parse(feature.routePolicy),
    developer_price_per_mtok_usd:
      feature.developerPricePerMtokUsd === null ? null : formatUsd(parseDatabaseAmount(feature.developerPricePerMtokUsd)),
    open_fee_usd: formatUsd(parseDatabaseAmount(feature.openFeeUsd)),
    max_output_tokens: feature.maxOutputTokens,
    model_aliases: feature.modelAliases,
    fallback_models: feature.fallbackModels,
    is_default: feature.featureKey === appDefaultFeatureKey,
    created_at: feature.createdAt.toISOString(),
    updated_at: feature.updatedAt.toISOString(),
    archived_at: feature.archivedAt?.toISOString() ?? null,
  };
}

/** The feature and its app's default, if `developerId` owns the app: unknown app and unknown feature are both 404. */
export async function getOwnedFeature(
  db: Db,
  input: { developerId: string; publicAppId: string; featureKey: string },
): Promise<{ feature: FeatureRecord; appDefaultFeatureKey: string | null }> {
  const [row] = await db
    .select({ appDefaultFeatureKey: apps.defaultFeatureKey, feature: featureColumns })
    .from(apps)
    .leftJoin(appFeatures, and(eq(appFeatures.appId, apps.id), eq(appFeatures.featureKey, input.featureKey)))
    .where(and(eq(apps.publicAppId, input.publicAppId), eq(apps.developerId, input.developerId)));
  if (!row) throw new FaucetError('not_found', 'Unknown app');
  if (!row.feature) throw new FaucetError('not_found', 'Unknown feature');
  return { feature: row.feature, appDefaultFeatureKey: row.appDefaultFeatureKey };
}

/** `before`/`after` of a feature in its audit rows: every setting, amounts as strings. */
export function featureAuditSql(alias: string) {
  return sql.raw(`jsonb_build_object(
    'name', ${alias}.name, 'default_model', ${alias}.default_model, 'allowed_models', ${alias}.allowed_models,
    'route_policy', ${alias}.route_policy, 'developer_price_per_mtok_usd', ${alias}.developer_price_per_mtok_usd::text,
    'open_fee_usd', ${alias}.open_fee_usd::text, 'max_output_tokens', ${alias}.max_output_tokens,
    'model_aliases', ${alias}.model_aliases, 'fallback_models', ${alias}.fallback_models,
    'archived_at', ${alias}.archived_at)`);
}
