/** A developer's apps, newest first (live and archived), a page at a time: keyset on (created_at, id), the cursor is the last public_app_id. */
import { and, desc, eq, sql } from 'drizzle-orm';
import { apps } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { type AppRecord, appColumns } from './app-view.ts';

export async function listApps(
  db: Db,
  developerId: string,
  page: { limit: number; cursor: string | undefined },
): Promise<{ rows: AppRecord[]; nextCursor: string | null }> {
  // An unknown cursor (or another developer's app id) makes the comparison null: an empty page.
  const after =
    page.cursor === undefined
      ? undefined
      : sql`(${apps.createdAt}, ${apps.id}) < (select c.created_at, c.id from apps c
              where c.public_app_id = ${page.cursor} and c.developer_id = ${developerId}::uuid)`;
  const rows = await db
    .select(appColumns)
    .from(apps)
    .where(and(eq(apps.developerId, developerId), after))
    .orderBy(desc(apps.createdAt), desc(apps.id))
    .limit(page.limit + 1);
  const shown = rows.slice(0, page.limit);
  return { rows: shown, nextCursor: rows.length > page.limit ? (shown.at(-1)?.publicAppId ?? null) : null };
}
