/**
 * The optional live check of a new key (`PROVIDER_KEY_LIVE_CHECK=true`; off by default and in
 * tests): one authenticated `GET <api root>/models` to the provider. It goes through the gateway's
 * outbound fetch, so a private, loopback or link-local destination is refused before any request.
 */
import { anthropicApiVersion, providerCatalog } from '../providers/provider-catalog.ts';
import { outboundFetch, type FetchFunction } from '../upstream/outbound-fetch.ts';
import type { Env } from '../env.ts';
import { FaucetError } from '../wire/errors.ts';
import type { KeyProvider } from './provider-formats.ts';

export interface LiveCheckOptions {
  fetch: FetchFunction;
  /** API root to ask; defaults to the provider's (tests pass others to prove the address guard). */
  baseUrl?: string;
  timeoutMs?: number;
}

export function liveCheckEnabled(env: Env): boolean {
  return env.PROVIDER_KEY_LIVE_CHECK === 'true';
}

function authHeaders(provider: KeyProvider, apiKey: string): Record<string, string> {
  return provider === 'anthropic'
    ? { 'x-api-key': apiKey, 'anthropic-version': anthropicApiVersion }
    : { authorization: `Bearer ${apiKey}` };
}

/** Resolves when the provider accepts the key; 400 when it refuses it, 502/504 when it cannot tell. */
export async function checkKeyLive(provider: KeyProvider, apiKey: string, options: LiveCheckOptions): Promise<void> {
  const root = (options.baseUrl ?? providerCatalog[provider].baseUrl).replace(/\/+$/, '');
  const response = await outboundFetch(
    `${root}/models`,
    { method: 'GET', headers: authHeaders(provider, apiKey) },
    { fetch: options.fetch, timeoutMs: options.timeoutMs ?? 10_000 },
  );
  await response.body?.cancel().catch(() => undefined);
  if (response.status === 401 || response.status === 403) {
    throw new FaucetError('invalid_request', `${provider} refused this api_key (HTTP ${response.status})`);
  }
  if (!response.ok) {
    throw new FaucetError('upstream_error', `${provider} could not confirm the key (HTTP ${response.status}); try again later`);
  }
}
