/**
 * The API root a stored key is used at: the catalog's, or — for providers without a common root (an
 * Azure resource, a custom OpenAI-compatible server) — the root registered with the key (migration
 * 0016). Read only for those providers, by the id the authorize statement chose, so other calls pay
 * no extra round trip. The outbound fetch checks the root again on every call.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type LedgerDatabase } from '#shared/ledger/database.ts';
import type { ProviderEntry } from '#shared/providers/provider-catalog.ts';

export async function storedKeyRoot(db: LedgerDatabase, credentialId: string, entry: ProviderEntry): Promise<string> {
  if (entry.baseUrl !== '') return entry.baseUrl;
  const [row] = await queryRows<{ base_url: string | null }>(
    db,
    sql`select base_url from provider_credentials where id = ${credentialId}::uuid`,
  );
  // A key without a root cannot be called: '' is refused by the outbound fetch's address check.
  return row?.base_url ?? '';
}
