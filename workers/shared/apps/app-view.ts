/**
 * What a developer sees of an app (docs/developers.md, "Apps and features"): one read of the row
 * through the query builder (its type is the schema's), one mapping to the wire, and the one list of
 * fields an audit row's `before`/`after` records. The internal id never leaves this module's callers.
 */
import { and, eq, sql } from 'drizzle-orm';
import { apps } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { formatUsd, parseDatabaseAmount } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';

/** The columns every app read selects. */
export const appColumns = {
  id: apps.id,
  publicAppId: apps.publicAppId,
  name: apps.name,
  defaultFeatureKey: apps.defaultFeatureKey,
  limitSpendPerDayUsd: apps.limitSpendPerDayUsd,
  limitSpendPerMonthUsd: apps.limitSpendPerMonthUsd,
  limitRequestsPerMinute: apps.limitRequestsPerMinute,
  sessionPolicy: apps.sessionPolicy,
  allowedOrigins: apps.allowedOrigins,
  createdAt: apps.createdAt,
  archivedAt: apps.archivedAt,
};

export type AppRecord = Pick<typeof apps.$inferSelect, keyof typeof appColumns>;

const usdOrNull = (value: string | null) => (value === null ? null : formatUsd(parseDatabaseAmount(value)));

export function toAppView(app: AppRecord) {
  return {
    public_app_id: app.publicAppId,
    name: app.name,
    default_feature_key: app.defaultFeatureKey,
    limits: {
      spend_per_day_usd: usdOrNull(app.limitSpendPerDayUsd),
      spend_per_month_usd: usdOrNull(app.limitSpendPerMonthUsd),
      requests_per_minute: app.limitRequestsPerMinute,
    },
    session_policy: app.sessionPolicy,
    allowed_origins: app.allowedOrigins,
    created_at: app.createdAt.toISOString(),
    archived_at: app.archivedAt?.toISOString() ?? null,
  };
}

/** The app if `developerId` owns it; another developer's app is as unknown as a missing one (404). */
export async function getOwnedApp(db: Db, developerId: string, publicAppId: string): Promise<AppRecord> {
  const [app] = await db
    .select(appColumns)
    .from(apps)
    .where(and(eq(apps.publicAppId, publicAppId), eq(apps.developerId, developerId)));
  if (!app) throw new FaucetError('not_found', 'Unknown app');
  return app;
}

/** `before`/`after` of an app in its audit rows: the fields a developer changes, amounts as strings. */
export function appAuditSql(alias: string) {
  return sql.raw(`jsonb_build_object(
    'name', ${alias}.name, 'default_feature_key', ${alias}.default_feature_key,
    'limits', jsonb_build_object('spend_per_day_usd', ${alias}.limit_spend_per_day_usd::text,
                                 'spend_per_month_usd', ${alias}.limit_spend_per_month_usd::text,
                                 'requests_per_minute', ${alias}.limit_requests_per_minute),
    'archived_at', ${alias}.archived_at)`);
}
