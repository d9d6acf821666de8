/**
 * A developer's outbound endpoint (a trace export's OTLP URL, a webhook endpoint), checked before it
 * is stored: the outbound fetch's address guard (no private, loopback, link-local or metadata address;
 * outside production only the one loopback `host:port` of UPSTREAM_ALLOW_LOOPBACK), https in
 * production, no credentials or fragment. The delivery checks the guard again before each send.
 */
import { isProduction, type Env } from '../env.ts';
import { FaucetError } from '../wire/errors.ts';
import { checkUpstreamUrl } from './address-guard.ts';
import { loopbackAllowance } from './loopback-allowance.ts';

/** The URL to store, or a 400 naming `field` and why not. */
export function publicEndpointUrl(value: string, env: Env, field: string): string {
  const verdict = checkUpstreamUrl(value, { allowLoopback: loopbackAllowance(env) });
  if (!verdict.allowed) throw invalid(`${field} is refused: ${verdict.reason}`);
  const url = verdict.url;
  if (isProduction(env) && url.protocol !== 'https:') throw invalid(`${field} must use https`);
  if (url.username !== '' || url.password !== '') throw invalid(`${field} must not carry credentials: send them as headers`);
  if (url.hash !== '') throw invalid(`${field} must not have a fragment`);
  return url.toString();
}

const invalid = (message: string) => new FaucetError('invalid_request', message);
