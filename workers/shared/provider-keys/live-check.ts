/**
 * The optional live check of a new key (`PROVIDER_KEY_LIVE_CHECK=true`; off by default and in
 * tests): one authenticated `GET <api root>/models` to the provider (an azure or custom key: its own
 * root). It goes through the gateway's outbound fetch, so a private, loopback or link-local destination
 * is refused before any request, and a redirect is not followed.
 */
import { anthropicApiVersion, azureApiVersion, type ProviderEntry, providerCatalog } from '../providers/provider-catalog.ts';
import { loopbackAllowance } from '../upstream/loopback-allowance.ts';
import { outboundFetch, type FetchFunction } from '../upstream/outbound-fetch.ts';
import type { Env } from '../env.ts';
import { FaucetError } from '../wire/errors.ts';
import type { KeyProvider } from './provider-formats.ts';

export interface LiveCheckOptions {
  fetch: FetchFunction;
  /** API root to ask; defaults to the provider's (an azure or custom key's own root; tests pass others to prove the address guard). */
  baseUrl?: string;
  /** Outside production, the one loopback port a local fake upstream may listen on (loopback-allowance.ts). */
  env?: Env;
  timeoutMs?: number;
}

export function liveCheckEnabled(env: Env): boolean {
  return env.PROVIDER_KEY_LIVE_CHECK === 'true';
}

/** The header each protocol or dialect sends its key in (as the gateway's adapters do). */
function authHeaders(provider: KeyProvider, apiKey: string): Record<string, string> {
  const entry: ProviderEntry = providerCatalog[provider];
  if (entry.protocol === 'anthropic') return { 'x-api-key': apiKey, 'anthropic-version': anthropicApiVersion };
  if (entry.protocol === 'gemini') return { 'x-goog-api-key': apiKey };
  if (entry.dialect?.auth === 'api_key') return { 'api-key': apiKey };
  return { authorization: `Bearer ${apiKey}` };
}

/** `<root>/models`; an Azure resource lists its models at `<root>/models?api-version=…`. */
function modelsUrl(provider: KeyProvider, baseUrl: string): string {
  const [root = '', query = ''] = baseUrl.split('?', 2);
  const trimmed = root.replace(/\/+$/, '');
  if (provider !== 'azure') return `${trimmed}/models`;
  const apiVersion = new URLSearchParams(query).get('api-version') ?? azureApiVersion;
  return `${trimmed}/models?api-version=${encodeURIComponent(apiVersion)}`;
}

/** Resolves when the provider accepts the key; 400 when it refuses it, 502/504 when it cannot tell. */
export async function checkKeyLive(provider: KeyProvider, apiKey: string, options: LiveCheckOptions): Promise<void> {
  const response = await outboundFetch(
    modelsUrl(provider, options.baseUrl ?? providerCatalog[provider].baseUrl),
    { method: 'GET', headers: authHeaders(provider, apiKey) },
    {
      fetch: options.fetch,
      timeoutMs: options.timeoutMs ?? 10_000,
      allowLoopback: options.env === undefined ? null : loopbackAllowance(options.env),
    },
  );
  await response.body?.cancel().catch(() => undefined);
  if (response.status === 401 || response.status === 403) {
    throw new FaucetError('invalid_request', `${provider} refused this api_key (HTTP ${response.status})`);
  }
  if (!response.ok) {
    throw new FaucetError('upstream_error', `${provider} could not confirm the key (HTTP ${response.status}); try again later`);
  }
}
