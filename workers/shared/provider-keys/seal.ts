/**
 * AES-256-GCM over WebCrypto: a fresh random 12-byte IV per encryption, and the row's id and
 * provider as additional data, so a ciphertext copied into another row does not decrypt.
 */
import { FaucetError } from '../wire/errors.ts';
import { decodeBase64, encodeBase64, type Keyring } from './keyring.ts';

export interface SealedKey {
  ciphertext: string;
  iv: string;
  keyVersion: number;
}

/** What a ciphertext is bound to: the provider_credentials row it lives in. */
export interface SealContext {
  credentialId: string;
  provider: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function additionalData(context: SealContext): Uint8Array<ArrayBuffer> {
  return encoder.encode(`faucet.provider_credentials:${context.credentialId}:${context.provider}`);
}

export async function sealKey(keyring: Keyring, plaintext: string, context: SealContext): Promise<SealedKey> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const encrypted = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: additionalData(context) },
    keyring.current.key,
    encoder.encode(plaintext),
  );
  return { ciphertext: encodeBase64(new Uint8Array(encrypted)), iv: encodeBase64(iv), keyVersion: keyring.current.version };
}

/** Decrypts a stored key; a missing key version or a tampered row is an internal error (never a client's). */
export async function openKey(keyring: Keyring, sealed: SealedKey, context: SealContext): Promise<string> {
  const key = keyring.byVersion.get(sealed.keyVersion);
  if (key === undefined) {
    throw new FaucetError('internal_error', `Provider key encryption key v${sealed.keyVersion} is not configured`);
  }
  const iv = decodeBase64(sealed.iv);
  const ciphertext = decodeBase64(sealed.ciphertext);
  if (iv === null || iv.byteLength !== 12 || ciphertext === null) {
    throw new FaucetError('internal_error', 'A stored provider key is malformed');
  }
  try {
    const plaintext = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: additionalData(context) }, key, ciphertext);
    return decoder.decode(plaintext);
  } catch (error) {
    throw new FaucetError('internal_error', 'A stored provider key could not be decrypted', { cause: error });
  }
}
