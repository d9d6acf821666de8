import { desc } from 'drizzle-orm';
import type { Db } from '../db.ts';
import type { KeyOwner } from './owner.ts';
import { k, ownedBy, type ProviderKeyRow, providerKeyColumns } from './provider-key-view.ts';

/** The owner's keys, active and disabled, newest first. */
export function listProviderKeys(db: Db, owner: KeyOwner): Promise<ProviderKeyRow[]> {
  return db.select(providerKeyColumns).from(k).where(ownedBy(owner)).orderBy(desc(k.createdAt), k.id);
}
