/** A developer's keys, newest first (live and revoked): prefix and dates, never the key or its hash. */
import { desc, eq } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { type DeveloperKeyRow, developerKeyColumns, k } from './developer-view.ts';

export function listDeveloperKeys(db: Db, developerId: string): Promise<DeveloperKeyRow[]> {
  return db.select(developerKeyColumns).from(k).where(eq(k.developerId, developerId)).orderBy(desc(k.createdAt), desc(k.id)).limit(200);
}
