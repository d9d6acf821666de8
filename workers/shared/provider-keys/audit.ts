/**
 * Audit rows for provider keys, written in the same statement as the change they record: actor,
 * action, target id, request id, time (the column default) and the provider — never key material,
 * not even the masked key.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AuditActor } from './owner.ts';

export type ProviderKeyAction = 'provider_key.created' | 'provider_key.disabled' | 'provider_key.re_encrypted';

/**
 * An `insert into audit_logs … select … from <rows>` for a data-modifying CTE: one row per row of
 * `rows`, whose `id`, `provider` and `owner_type` columns it reads.
 */
export function auditInsertSql(rows: SQL, actor: AuditActor, action: ProviderKeyAction, requestId: string): SQL {
  return sql`insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    select ${actor.type}, ${actor.id}, ${action}, 'provider_credential', r.id::text, ${requestId},
           jsonb_build_object('provider', r.provider, 'owner_type', r.owner_type)
      from ${rows} r`;
}
