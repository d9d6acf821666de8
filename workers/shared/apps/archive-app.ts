/**
 * Archive an app: never deleted (ledger rows reference it). From then on it refuses new sessions
 * (`POST /v1/sessions`), gateway calls (`app_archived`, the check every call passes) and every change to it
 * or its features; its usage, ledger and audit rows stay. Idempotent: an archived app is returned as
 * it is, with no second audit row. There is no unarchive.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { appAuditSql } from './app-view.ts';

export async function archiveApp(
  db: SqlDatabase,
  input: { developerId: string; publicAppId: string; actor: AuditActor; requestId: string | null },
): Promise<void> {
  const row = await queryOne<{ found: boolean }>(
    db,
    sql`with cur as (
          select a.* from apps a where a.public_app_id = ${input.publicAppId} and a.developer_id = ${input.developerId}::uuid
             for update),
        archived as (
          update apps a set archived_at = now() from cur where a.id = cur.id and cur.archived_at is null returning a.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'app.archived', 'app', a.public_app_id, ${input.requestId},
                 jsonb_build_object('before', ${appAuditSql('cur')}, 'after', ${appAuditSql('a')})
            from archived a, cur)
        select exists (select 1 from cur) as found`,
  );
  if (!row.found) throw new FaucetError('not_found', 'Unknown app');
}
