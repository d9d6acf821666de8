/** Developers, newest first, a page at a time (keyset on created_at, id: the cursor is the last id seen). */
import { sql } from 'drizzle-orm';
import { isUuid, queryRows, type LedgerDatabase } from '../ledger/database.ts';
import { FaucetError } from '../wire/errors.ts';
import { developerColumnsSql, type DeveloperRow } from './developer-view.ts';

export async function listDevelopers(
  db: LedgerDatabase,
  page: { limit: number; cursor: string | undefined },
): Promise<{ rows: DeveloperRow[]; nextCursor: string | null }> {
  if (page.cursor !== undefined && !isUuid(page.cursor)) throw new FaucetError('invalid_request', 'cursor is malformed');
  const after =
    page.cursor === undefined
      ? sql`true`
      : sql`(d.created_at, d.id) < (select c.created_at, c.id from developers c where c.id = ${page.cursor}::uuid)`;
  const rows = await queryRows<DeveloperRow>(
    db,
    sql`select ${developerColumnsSql} from developers d where ${after}
         order by d.created_at desc, d.id desc limit ${page.limit + 1}`,
  );
  const more = rows.length > page.limit;
  const shown = rows.slice(0, page.limit);
  return { rows: shown, nextCursor: more ? (shown.at(-1)?.id ?? null) : null };
}
