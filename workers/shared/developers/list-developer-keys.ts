/** A developer's keys, newest first (live and revoked): prefix and dates, never the key or its hash. */
import { sql } from 'drizzle-orm';
import { queryRows, type LedgerDatabase } from '../ledger/database.ts';
import { type DeveloperKeyRow, developerKeyColumnsSql } from './developer-view.ts';

export function listDeveloperKeys(db: LedgerDatabase, developerId: string): Promise<DeveloperKeyRow[]> {
  return queryRows<DeveloperKeyRow>(
    db,
    sql`select ${developerKeyColumnsSql} from developer_keys k
         where k.developer_id = ${developerId}::uuid order by k.created_at desc, k.id desc limit 200`,
  );
}
