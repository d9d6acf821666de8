/**
 * Opens (decrypts) a stored provider key the gateway's authorize statement chose for a call. The
 * sealed columns come back in a call's facts (`faucet_lease_context`); the key itself exists in plaintext only in
 * the memory of the call that uses it.
 */
import type { Env } from '../env.ts';
import { keyringFrom } from './keyring.ts';
import { openKey } from './seal.ts';

export interface StoredKeyColumns {
  credentialId: string;
  provider: string;
  ciphertext: string;
  iv: string;
  keyVersion: number;
}

export async function openStoredKey(env: Env, stored: StoredKeyColumns): Promise<string> {
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  return openKey(
    keyring,
    { ciphertext: stored.ciphertext, iv: stored.iv, keyVersion: stored.keyVersion },
    { credentialId: stored.credentialId, provider: stored.provider },
  );
}
