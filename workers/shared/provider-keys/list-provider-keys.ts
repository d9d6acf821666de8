import { sql } from 'drizzle-orm';
import { queryRows, type LedgerDatabase } from '../ledger/database.ts';
import type { KeyOwner } from './owner.ts';
import { ownedBySql, viewColumnsSql, type ProviderKeyRow } from './provider-key-view.ts';

/** The owner's keys, active and disabled, newest first. */
export function listProviderKeys(db: LedgerDatabase, owner: KeyOwner): Promise<ProviderKeyRow[]> {
  return queryRows<ProviderKeyRow>(
    db,
    sql`select ${viewColumnsSql} from provider_credentials k where ${ownedBySql(owner)} order by k.created_at desc, k.id`,
  );
}
