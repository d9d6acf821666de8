/**
 * The stored form of an end user's identity (`end_users.external_user_hash`, DESIGN §2): an HMAC
 * under SESSION_HASH_SECRET, in two domains no input can cross (docs/identity.md, "Devices and
 * named users"). A named user — the app's `external_user_id`, a user token's `sub` — hashes the
 * UTF-8 text of the id. A device hashes 0xFF then its id: 0xFF never occurs in UTF-8, so no name,
 * whatever its characters, yields a device's hash.
 *
 * Devices were hashed as the text `anonymous-device:<id>` before; a name with that prefix is refused
 * for good, since rows stored under it may still be devices (they move to the device domain when the
 * device next asks for a session).
 */
import { hashExternalUserId, hmacSha256Hex } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';

const formerDevicePrefix = 'anonymous-device:';
const deviceDomain = new Uint8Array([0xff]);
const encoder = new TextEncoder();

export function isReservedUserId(externalUserId: string): boolean {
  return externalUserId.startsWith(formerDevicePrefix);
}

/** The hash of a named end user; a name in the devices' former namespace is refused. */
export function namedUserHash(secret: string, externalUserId: string): Promise<string> {
  if (isReservedUserId(externalUserId)) {
    throw new FaucetError('invalid_request', `external_user_id must not begin with ${formerDevicePrefix} (reserved for device identities)`);
  }
  return hashExternalUserId(secret, externalUserId);
}

export interface DeviceUserHash {
  hash: string;
  /** The hash the device may still be stored under (the text `anonymous-device:<id>`). */
  formerHash: string;
}

export async function deviceUserHash(secret: string, deviceId: string): Promise<DeviceUserHash> {
  const id = encoder.encode(deviceId);
  const input = new Uint8Array(deviceDomain.length + id.length);
  input.set(deviceDomain);
  input.set(id, deviceDomain.length);
  return {
    hash: await hmacSha256Hex(secret, input),
    formerHash: await hashExternalUserId(secret, `${formerDevicePrefix}${deviceId}`),
  };
}
