/**
 * Revoke one of the developer's own keys: it gets 401 from the next request on. Idempotent (a
 * revoked key is returned as it is, no second audit row). The last live key cannot be revoked
 * (`invalid_state`): the developer would lock themselves out; create a new one first. Also under a
 * race: the live keys are counted after the developer row is locked (faucet_lock_live_developer_keys),
 * so of two revocations of the last two keys the second keeps its key. Another developer's key, or no
 * such key, is `not_found` and changes nothing.
 */
import { sql } from 'drizzle-orm';
import { isUuid, type SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { type DeveloperKeyRow, developerKeyColumns } from './developer-view.ts';

export async function revokeDeveloperKey(
  db: SqlDatabase,
  input: { developerId: string; keyId: string; actor: AuditActor; requestId: string | null },
): Promise<DeveloperKeyRow> {
  if (!isUuid(input.keyId)) throw new FaucetError('not_found', 'Developer key not found');
  const owned = sql`k.id = ${input.keyId}::uuid and k.developer_id = ${input.developerId}::uuid`;
  const [row] = await querySelection(
    db,
    developerKeyColumns,
    (columns) => sql`with changed as (
          update developer_keys k set revoked_at = now()
           where ${owned} and k.revoked_at is null and faucet_lock_live_developer_keys(k.developer_id) > 1
          returning k.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'developer_key.revoked', 'developer_key', k.id::text, ${input.requestId},
                 jsonb_build_object('developer_id', k.developer_id, 'prefix', k.prefix,
                                    'before', jsonb_build_object('revoked', false), 'after', jsonb_build_object('revoked', true))
            from changed k)
        select ${columns} from changed k
        union all
        select ${columns} from developer_keys k where ${owned} and not exists (select 1 from changed)`,
  );
  if (!row) throw new FaucetError('not_found', 'Developer key not found');
  if (row.revokedAt === null) throw new FaucetError('invalid_state', 'This is your last live key: create another one before revoking it');
  return row;
}
