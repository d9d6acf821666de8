/** Hashing and token primitives over WebCrypto: the same code runs in workerd and in Node 22. */
const encoder = new TextEncoder();

const hexOfByte = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function toHex(buffer: ArrayBuffer): string {
  let hex = '';
  for (const byte of new Uint8Array(buffer)) hex += hexOfByte[byte];
  return hex;
}

export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export async function sha256Hex(value: string): Promise<string> {
  return toHex(await crypto.subtle.digest('SHA-256', encoder.encode(value)));
}

/** A string is signed as its UTF-8 bytes; bytes as given (an input no string can spell, e.g. with 0xFF). */
export async function hmacSha256Hex(secret: string, value: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(await crypto.subtle.sign('HMAC', key, typeof value === 'string' ? encoder.encode(value) : value));
}

/** `prefix` + 32 random bytes, base64url (DESIGN §2: `fvs_` sessions, `fdk_` developer keys). */
export function randomToken(prefix: string, bytes = 32): string {
  return prefix + base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Constant-time comparison of two strings (admin token), independent of where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  let difference = left.length ^ right.length;
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    difference |= (left[index] ?? 0) ^ (right[index] ?? 0);
  }
  return difference === 0;
}

/** The stored form of an end user's external ID (DESIGN §2): never the raw value. */
export function hashExternalUserId(secret: string, externalUserId: string): Promise<string> {
  return hmacSha256Hex(secret, externalUserId);
}
