/**
 * Session tokens that name their wallet (docs/edge.md): `fvs_w<wallet>_<32 random bytes,
 * base64url>`. The wallet part is an HMAC of the end user's row id under SESSION_HASH_SECRET, cut to
 * 32 hex: the gateway reaches the wallet's Durable Object from the token alone, with no database
 * lookup, and nobody without the secret can tell whose wallet it names or link two apps' users.
 * The wallet part routes; it proves nothing. The object still checks the token's hash against the
 * session it loads from Postgres and checks that the session's end user is the one its name is
 * derived from. Only the token's SHA-256 is stored, as before.
 */
import { hmacSha256Hex, randomToken } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';

/** What the HMAC signs before the end user's row id (a label apart from user_ref's). */
const walletLabel = 'wallet-object:';

const walletTokenPattern = /^fvs_w([0-9a-f]{32})_[A-Za-z0-9_-]{43}$/;

/** The name of an end user's wallet object. */
export async function walletName(secret: string | undefined, endUserId: string): Promise<string> {
  if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
  return (await hmacSha256Hex(secret, `${walletLabel}${endUserId}`)).slice(0, 32);
}

/** A new session token naming `wallet`. */
export function mintSessionToken(wallet: string): string {
  if (!/^[0-9a-f]{32}$/.test(wallet)) throw new TypeError('a wallet name is 32 hex digits');
  return randomToken(`fvs_w${wallet}_`);
}

/** The wallet a token names; null for a token of the older form (refused: mint a new session) or a malformed one. */
export function walletOfToken(token: string): string | null {
  return walletTokenPattern.exec(token)?.[1] ?? null;
}
