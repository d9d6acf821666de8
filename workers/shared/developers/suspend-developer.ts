/**
 * Suspend or unsuspend a developer (admin): a suspended developer's keys get 403 and their apps
 * refuse new sessions and gateway calls (the session check every call passes: faucet_call_context). Idempotent: a
 * developer already in the asked state is returned unchanged, with no second audit row.
 */
import { sql } from 'drizzle-orm';
import { isUuid, type SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { developerColumns, type DeveloperRow } from './developer-view.ts';

export async function setDeveloperSuspended(
  db: SqlDatabase,
  input: { developerId: string; suspended: boolean; actor: AuditActor; requestId: string | null },
): Promise<DeveloperRow> {
  if (!isUuid(input.developerId)) throw new FaucetError('not_found', 'Developer not found');
  const { suspended } = input;
  const [row] = await querySelection(
    db,
    developerColumns,
    (columns) => sql`with changed as (
          update developers d set suspended_at = case when ${suspended}::boolean then now() end
           where d.id = ${input.developerId}::uuid and (d.suspended_at is null) = ${suspended}::boolean
          returning d.*),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, ${suspended ? 'developer.suspended' : 'developer.unsuspended'},
                 'developer', d.id::text, ${input.requestId},
                 jsonb_build_object('before', jsonb_build_object('suspended', not ${suspended}::boolean),
                                    'after', jsonb_build_object('suspended', ${suspended}::boolean))
            from changed d)
        select ${columns} from changed d
        union all
        select ${columns} from developers d
         where d.id = ${input.developerId}::uuid and not exists (select 1 from changed)`,
  );
  if (!row) throw new FaucetError('not_found', 'Developer not found');
  return row;
}
