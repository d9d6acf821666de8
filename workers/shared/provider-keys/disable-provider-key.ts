/**
 * Disable one of the owner's keys: the row stays (status `disabled`, `disabled_at` set) and is never
 * used again. Idempotent: disabling a disabled key returns it unchanged and writes no second audit
 * row. Another owner's id, or no such id, is `not_found` and changes nothing.
 */
import { eq, sql } from 'drizzle-orm';
import { FaucetError } from '../wire/errors.ts';
import { isUuid, type SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import { auditInsertSql } from './audit.ts';
import { actorOf, type KeyOwner } from './owner.ts';
import { k, ownedBy, type ProviderKeyRow, providerKeyColumns } from './provider-key-view.ts';

export async function disableProviderKey(db: SqlDatabase, owner: KeyOwner, id: string, requestId: string): Promise<ProviderKeyRow> {
  if (!isUuid(id)) throw new FaucetError('not_found', 'Provider key not found');
  const row = await disableOnce(db, owner, id, requestId);
  // A concurrent disable committed between this statement's snapshot and its update: read it again.
  return row.status === 'active' ? disableOnce(db, owner, id, requestId) : row;
}

async function disableOnce(db: SqlDatabase, owner: KeyOwner, id: string, requestId: string): Promise<ProviderKeyRow> {
  const rows = await querySelection(
    db,
    providerKeyColumns,
    (columns) => sql`with changed as (
          update provider_credentials k set status = 'disabled', disabled_at = now()
           where ${eq(k.id, id)} and ${ownedBy(owner)} and k.status = 'active'
          returning k.*),
        audit as (${auditInsertSql(sql`changed`, actorOf(owner), 'provider_key.disabled', requestId)})
        select ${columns} from changed k
        union all
        select ${columns} from provider_credentials k
         where ${eq(k.id, id)} and ${ownedBy(owner)} and not exists (select 1 from changed)`,
  );
  const row = rows[0];
  if (row === undefined) throw new FaucetError('not_found', 'Provider key not found');
  return row;
}
