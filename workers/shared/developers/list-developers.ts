/** Developers, newest first, a page at a time (keyset on created_at, id: the cursor is the last id seen). */
import { desc, sql } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { isUuid } from '../query.ts';
import { FaucetError } from '../wire/errors.ts';
import { d, developerColumns, type DeveloperRow } from './developer-view.ts';

export async function listDevelopers(
  db: Db,
  page: { limit: number; cursor: string | undefined },
): Promise<{ rows: DeveloperRow[]; nextCursor: string | null }> {
  if (page.cursor !== undefined && !isUuid(page.cursor)) throw new FaucetError('invalid_request', 'cursor is malformed');
  const after =
    page.cursor === undefined
      ? undefined
      : sql`(${d.createdAt}, ${d.id}) < (select c.created_at, c.id from developers c where c.id = ${page.cursor}::uuid)`;
  const rows = await db
    .select(developerColumns)
    .from(d)
    .where(after)
    .orderBy(desc(d.createdAt), desc(d.id))
    .limit(page.limit + 1);
  const more = rows.length > page.limit;
  const shown = rows.slice(0, page.limit);
  return { rows: shown, nextCursor: more ? (shown.at(-1)?.id ?? null) : null };
}
