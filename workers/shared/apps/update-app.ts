/**
 * Change an app's name, default feature or per-end-user limits, with its audit row (`app.updated`,
 * `before`/`after`) in the same statement. Fields not given keep their value; a limit given as null
 * is cleared. The default feature must be a live feature of the app; an archived app takes no
 * change (`invalid_state`). A change to nothing writes no audit row.
 *
 * Race: the app row is locked first and the named feature row next (`for update`, so a feature
 * archived after this statement's snapshot is seen archived); archiving a feature locks in the same
 * order, so the default can never end up naming an archived feature.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { type AppLimitsInput, parseAppLimits } from './app-limits.ts';
import { appAuditSql } from './app-view.ts';
import { displayName, featureKey } from './names.ts';

export interface UpdateAppInput {
  developerId: string;
  publicAppId: string;
  name?: string;
  defaultFeatureKey?: string;
  limits?: AppLimitsInput;
  actor: AuditActor;
  requestId: string | null;
}

/** `case when <given> then <new> else <current> end`: a field not given keeps its value. */
const changed = (given: boolean, value: unknown, cast: string, column: string) =>
  sql`case when ${given}::boolean then ${value}${sql.raw(cast)} else cur.${sql.raw(column)} end`;

export async function updateApp(db: SqlDatabase, input: UpdateAppInput): Promise<void> {
  const name = input.name === undefined ? null : displayName(input.name);
  const defaultKey = input.defaultFeatureKey === undefined ? null : featureKey(input.defaultFeatureKey);
  const limits = parseAppLimits(input.limits);
  if (name === null && defaultKey === null && Object.values(limits).every((value) => value === undefined)) {
    throw new FaucetError('invalid_request', 'Nothing to change: give name, default_feature_key or limits');
  }
  const setDefault = defaultKey !== null;
  const row = await queryOne<{ found: boolean; archived: boolean; feature_ok: boolean }>(
    db,
    sql`with cur as (
          select a.* from apps a where a.public_app_id = ${input.publicAppId} and a.developer_id = ${input.developerId}::uuid
             for update),
        feature as (
          select f.feature_key from app_features f join cur on f.app_id = cur.id
           where f.feature_key = ${defaultKey} and f.archived_at is null
             for update of f),
        next as (
          select cur.id,
                 coalesce(${name}, cur.name) as name,
                 case when ${setDefault}::boolean then (select feature_key from feature) else cur.default_feature_key end
                   as default_feature_key,
                 ${changed(limits.spendPerDayUsd !== undefined, limits.spendPerDayUsd ?? null, '::numeric', 'limit_spend_per_day_usd')}
                   as limit_spend_per_day_usd,
                 ${changed(limits.spendPerMonthUsd !== undefined, limits.spendPerMonthUsd ?? null, '::numeric', 'limit_spend_per_month_usd')}
                   as limit_spend_per_month_usd,
                 ${changed(limits.requestsPerMinute !== undefined, limits.requestsPerMinute ?? null, '::integer', 'limit_requests_per_minute')}
                   as limit_requests_per_minute
            from cur),
        updated as (
          update apps a
             set name = n.name, default_feature_key = n.default_feature_key,
                 limit_spend_per_day_usd = n.limit_spend_per_day_usd, limit_spend_per_month_usd = n.limit_spend_per_month_usd,
                 limit_requests_per_minute = n.limit_requests_per_minute
            from next n, cur
           where a.id = n.id and cur.archived_at is null
             and (not ${setDefault}::boolean or exists (select 1 from feature))
             and (n.name, n.default_feature_key, n.limit_spend_per_day_usd, n.limit_spend_per_month_usd, n.limit_requests_per_minute)
                 is distinct from
                 (cur.name, cur.default_feature_key, cur.limit_spend_per_day_usd, cur.limit_spend_per_month_usd,
                  cur.limit_requests_per_minute)
          returning a.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'app.updated', 'app', u.public_app_id, ${input.requestId},
                 jsonb_build_object('before', ${appAuditSql('cur')}, 'after', ${appAuditSql('u')})
            from updated u, cur)
        select exists (select 1 from cur) as found,
               coalesce((select archived_at is not null from cur), false) as archived,
               (not ${setDefault}::boolean or exists (select 1 from feature)) as feature_ok`,
  );
  if (!row.found) throw new FaucetError('not_found', 'Unknown app');
  if (row.archived) throw new FaucetError('invalid_state', 'This app is archived: it takes no changes');
  if (!row.feature_ok) throw new FaucetError('invalid_request', 'default_feature_key must name a live (not archived) feature of this app');
}
