/**
 * Archive a feature: never deleted (usage records name it). Calls naming it are refused from then on
 * (`feature_archived`, the check every call passes). The app's default feature cannot be archived
 * (`invalid_state`): set another default first (PATCH the app's `default_feature_key`), so a call
 * without `feature` always has a live feature to use — which also means an app's last live feature
 * stays until the app itself is archived. Idempotent; an archived app takes no change.
 *
 * Race: the app row is locked before the feature row, as the default's update does, and the default
 * is read from the locked (latest) app row.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { featureAuditSql } from './feature-view.ts';

export async function archiveFeature(
  db: SqlDatabase,
  input: { developerId: string; publicAppId: string; featureKey: string; actor: AuditActor; requestId: string | null },
): Promise<void> {
  const row = await queryOne<{ app_found: boolean; app_archived: boolean; found: boolean; archived: boolean; is_default: boolean }>(
    db,
    sql`with app as (
          select a.* from apps a where a.public_app_id = ${input.publicAppId} and a.developer_id = ${input.developerId}::uuid
             for update),
        cur as (
          select f.* from app_features f join app on f.app_id = app.id where f.feature_key = ${input.featureKey}
             for update of f),
        archived as (
          update app_features f set archived_at = now(), updated_at = now() from cur, app
           where f.id = cur.id and cur.archived_at is null and app.archived_at is null
             and app.default_feature_key is distinct from cur.feature_key
          returning f.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'feature.archived', 'app_feature', app.public_app_id || '/' || a.feature_key,
                 ${input.requestId}, jsonb_build_object('before', ${featureAuditSql('cur')}, 'after', ${featureAuditSql('a')})
            from archived a, cur, app)
        select exists (select 1 from app) as app_found,
               coalesce((select archived_at is not null from app), false) as app_archived,
               exists (select 1 from cur) as found,
               coalesce((select archived_at is not null from cur), false) as archived,
               coalesce((select app.default_feature_key = cur.feature_key from app, cur), false) as is_default`,
  );
  if (!row.app_found) throw new FaucetError('not_found', 'Unknown app');
  if (!row.found) throw new FaucetError('not_found', 'Unknown feature');
  if (row.archived) return;
  if (row.app_archived) throw new FaucetError('invalid_state', 'This app is archived: its features take no changes');
  if (row.is_default) {
    throw new FaucetError('invalid_state', "This is the app's default feature: set another default_feature_key first");
  }
}
