/**
 * The encryption keys of stored provider keys, from `PROVIDER_KEY_ENCRYPTION_KEY`:
 * `v1:<base64 of 32 bytes>`, or during a rotation `v2:<b64>,v1:<b64>` — the first entry is the
 * current key (new and re-encrypted rows), the others only decrypt rows not yet re-encrypted.
 */
import { FaucetError } from '../wire/errors.ts';

export interface Keyring {
  current: { version: number; key: CryptoKey };
  byVersion: ReadonlyMap<number, CryptoKey>;
}

const entryPattern = /^v([1-9][0-9]{0,5}):([A-Za-z0-9+/]{43}=)$/;

/** Parsed keyrings by secret text: importing the keys once per isolate, not once per request. */
const cache = new Map<string, Promise<Keyring>>();

export function keyringFrom(secret: unknown): Promise<Keyring> {
  if (typeof secret !== 'string' || secret.trim() === '') {
    return Promise.reject(new FaucetError('internal_error', 'PROVIDER_KEY_ENCRYPTION_KEY is not configured'));
  }
  let keyring = cache.get(secret);
  if (keyring === undefined) {
    keyring = parseKeyring(secret);
    keyring.catch(() => cache.delete(secret));
    cache.set(secret, keyring);
  }
  return keyring;
}

async function parseKeyring(secret: string): Promise<Keyring> {
  const byVersion = new Map<number, CryptoKey>();
  let current: Keyring['current'] | undefined;
  for (const entry of secret.split(',').map((part) => part.trim())) {
    const match = entryPattern.exec(entry);
    const bytes = match ? decodeBase64(match[2]!) : null;
    // The message never quotes the entry: it is key material.
    if (match === null || bytes === null || bytes.byteLength !== 32) {
      throw new FaucetError(
        'internal_error',
        'PROVIDER_KEY_ENCRYPTION_KEY is malformed: expected "v<N>:<base64 of 32 bytes>" entries separated by commas',
      );
    }
    const version = Number(match[1]);
    if (byVersion.has(version)) throw new FaucetError('internal_error', `PROVIDER_KEY_ENCRYPTION_KEY names version v${version} twice`);
    const key = await crypto.subtle.importKey('raw', bytes, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
    byVersion.set(version, key);
    current ??= { version, key };
  }
  return { current: current!, byVersion };
}

export function decodeBase64(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
    return bytes;
  } catch {
    return null;
  }
}

export function encodeBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
