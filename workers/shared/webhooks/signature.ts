/**
 * How a delivery is signed (docs/webhooks.md), as Stripe signs: the header
 * `faucet-signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`, each v1 the HMAC-SHA-256 of
 * `<t>.<raw body>` under one of the endpoint's live secrets (two during a rotation's overlap). A
 * receiver accepts when any v1 matches its secret and t is recent (replays older than the tolerance
 * are refused); the event id (`faucet-event-id`, the body's `id`) recognises a redelivery.
 */
import { hmacSha256Hex, timingSafeEqual } from '../crypto.ts';

export const signatureHeaderName = 'faucet-signature';
/** A receiver's default tolerance between t and its own clock. */
export const defaultToleranceSeconds = 300;

export function signPayload(secret: string, timestamp: number, body: string): Promise<string> {
  return hmacSha256Hex(secret, `${timestamp}.${body}`);
}

/** The header's value: one v1 per secret, the current one first. */
export async function signatureHeader(secrets: readonly string[], timestamp: number, body: string): Promise<string> {
  const signatures = await Promise.all(secrets.map((secret) => signPayload(secret, timestamp, body)));
  return [`t=${timestamp}`, ...signatures.map((signature) => `v1=${signature}`)].join(',');
}

/**
 * The receiver's check, as documented: the raw body (exactly the bytes received), the header and the
 * secret. False for a malformed header, a timestamp outside the tolerance, or no matching signature.
 */
export async function verifySignature(
  header: string | null,
  body: string,
  secret: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): Promise<boolean> {
  if (header === null) return false;
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.split('=', 2);
    if (name === 't' && value !== undefined && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && value !== undefined) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) return false;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? defaultToleranceSeconds)) return false;
  const expected = await signPayload(secret, timestamp, body);
  return signatures.some((signature) => timingSafeEqual(signature, expected));
}
