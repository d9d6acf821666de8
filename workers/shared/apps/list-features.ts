/** An app's features, newest first (live and archived), a page at a time: keyset on (created_at, id), the cursor is the last feature_key. */
import { and, desc, eq, sql } from 'drizzle-orm';
import { appFeatures } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { getOwnedApp } from './app-view.ts';
import { type FeatureRecord, featureColumns } from './feature-view.ts';

export async function listFeatures(
  db: Db,
  input: { developerId: string; publicAppId: string; limit: number; cursor: string | undefined },
): Promise<{ rows: FeatureRecord[]; appDefaultFeatureKey: string | null; nextCursor: string | null }> {
  const app = await getOwnedApp(db, input.developerId, input.publicAppId);
  // An unknown cursor makes the comparison null: an empty page.
  const after =
    input.cursor === undefined
      ? undefined
      : sql`(${appFeatures.createdAt}, ${appFeatures.id}) < (select c.created_at, c.id from app_features c
              where c.app_id = ${app.id}::uuid and c.feature_key = ${input.cursor})`;
  const rows = await db
    .select(featureColumns)
    .from(appFeatures)
    .where(and(eq(appFeatures.appId, app.id), after))
    .orderBy(desc(appFeatures.createdAt), desc(appFeatures.id))
    .limit(input.limit + 1);
  const shown = rows.slice(0, input.limit);
  return {
    rows: shown,
    appDefaultFeatureKey: app.defaultFeatureKey,
    nextCursor: rows.length > input.limit ? (shown.at(-1)?.featureKey ?? null) : null,
  };
}
