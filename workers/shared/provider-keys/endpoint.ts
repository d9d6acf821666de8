/**
 * The endpoint a stored key is used at. `azure` and `custom` keys name their own API root (an Azure
 * resource, any public OpenAI-compatible server); every other provider's key is used at the catalog's
 * root and takes none. A root is checked here when the key is stored — a public host (the outbound
 * fetch's address guard: no private, loopback, link-local, metadata or wildcard-DNS name), https in
 * production, no credentials, fragment or stray query — and again by the outbound fetch of every call,
 * which also follows no redirect.
 */
import { isProduction, type Env } from '../env.ts';
import { checkUpstreamUrl } from '../upstream/address-guard.ts';
import { loopbackAllowance } from '../upstream/loopback-allowance.ts';
import { FaucetError } from '../wire/errors.ts';
import { endpointProviders, type KeyProvider } from './provider-formats.ts';

const azureApiVersionPattern = /^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$/;

/** The root to store for a new key of `provider` (null: the catalog's), or a 400 saying what is wrong. */
export function endpointFor(provider: KeyProvider, baseUrl: string | undefined, env: Env): string | null {
  if (!endpointProviders.has(provider)) {
    if (baseUrl !== undefined) throw invalid(`base_url is accepted only for ${[...endpointProviders].join(' and ')} keys`);
    return null;
  }
  if (baseUrl === undefined) {
    throw invalid(
      provider === 'azure'
        ? 'base_url is required for azure keys: the resource root, e.g. https://<resource>.openai.azure.com/openai'
        : 'base_url is required for custom keys: the API root of the OpenAI-compatible server, e.g. https://llm.example.com/v1',
    );
  }
  const verdict = checkUpstreamUrl(baseUrl, { allowLoopback: loopbackAllowance(env) });
  if (!verdict.allowed) throw invalid(`base_url is refused: ${verdict.reason}`);
  const url = verdict.url;
  if (isProduction(env) && url.protocol !== 'https:') throw invalid('base_url must use https');
  if (url.hash !== '') throw invalid('base_url must not have a fragment');
  const params = [...url.searchParams.keys()];
  if (provider === 'azure') {
    const version = url.searchParams.get('api-version');
    if (params.some((name) => name !== 'api-version') || (version !== null && !azureApiVersionPattern.test(version))) {
      throw invalid('base_url may carry only ?api-version=YYYY-MM-DD (or YYYY-MM-DD-preview)');
    }
  } else if (params.length > 0 || url.search !== '') {
    throw invalid('base_url must not have a query');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${url.search}`;
}

const invalid = (message: string) => new FaucetError('invalid_request', message);
