/**
 * The opaque reference of an end user that clients put in local usage reports (`user_id_hash`):
 * an HMAC of the end user's row id under SESSION_HASH_SECRET, returned by `POST /v1/sessions`.
 * Unlike a hash of the raw user id, nobody without the server's secret can compute it from an
 * email or a user number, nor link it to one.
 */
import { hmacSha256Hex } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';

/** What the HMAC signs before the row id; `developers/find-end-user-by-ref.ts` computes the same in SQL. */
export const userRefPrefix = 'user-ref:';

export function userRef(secret: string | undefined, endUserId: string): Promise<string> {
  if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
  return hmacSha256Hex(secret, `${userRefPrefix}${endUserId}`);
}
