/**
 * A stored key (BYOK or a developer's) as the credential a call is sent with: opened by
 * `openStoredKey`, at the API root it is used at — the catalog's, or for providers without a common
 * root (an Azure resource, a custom OpenAI-compatible server) the root registered with the key
 * (a wallet object's answer carries it with the key; a byok fallback's is read by its id, only for
 * those providers). The outbound fetch checks the root again on every call.
 */
import { sql } from 'drizzle-orm';
import type { Env } from '#shared/env.ts';
import { queryRows, type SqlDatabase } from '#shared/query.ts';
import { openStoredKey } from '#shared/provider-keys/open-stored-key.ts';
import type { ProviderEntry } from '#shared/providers/provider-catalog.ts';
import { loopbackAllowance } from '#shared/upstream/loopback-allowance.ts';
import type { ProviderCredential } from '../providers/provider.ts';

/** A stored key as the statements answer it, still sealed. */
export interface SealedKey {
  id: string;
  ciphertext: string;
  iv: string;
  keyVersion: number;
}

export async function storedKeyRoot(db: SqlDatabase, credentialId: string, entry: ProviderEntry): Promise<string> {
  if (entry.baseUrl !== '') return entry.baseUrl;
  const [row] = await queryRows<{ base_url: string | null }>(
    db,
    sql`select base_url from provider_credentials where id = ${credentialId}::uuid`,
  );
  return keyRoot(entry, row?.base_url ?? null);
}

/** The root a key is used at, its registered root already known (null: none registered). */
export function keyRoot(entry: ProviderEntry, registered: string | null): string {
  // A key without a root cannot be called: '' is refused by the outbound fetch's address check.
  return entry.baseUrl !== '' ? entry.baseUrl : (registered ?? '');
}

/** The key opened (it throws when it cannot be) into the credential a call to `provider` is sent with at `baseUrl`. */
export async function storedKeyCredential(env: Env, provider: string, key: SealedKey, baseUrl: string): Promise<ProviderCredential> {
  const apiKey = await openStoredKey(env, {
    credentialId: key.id,
    provider,
    ciphertext: key.ciphertext,
    iv: key.iv,
    keyVersion: key.keyVersion,
  });
  return { apiKey, baseUrl, allowLoopback: loopbackAllowance(env) };
}
