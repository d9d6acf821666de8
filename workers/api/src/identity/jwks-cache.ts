/**
 * The developers' JWKS documents, fetched only through the gateway's guarded outbound fetch (public
 * https hosts, no redirects, a timeout) and cached per isolate. A token whose `kid` the cached set
 * does not know makes one refetch (the developer rotated keys), at most once per cooldown, so a
 * stream of tokens with made-up kids cannot turn into a stream of fetches.
 */
import type { JSONWebKeySet } from 'jose';
import { FaucetError } from '#shared/wire/errors.ts';
import { outboundFetch, type FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { readBodyText } from '#shared/upstream/read-body.ts';

const cacheTtlMs = 10 * 60_000;
const refetchCooldownMs = 30_000;
const fetchTimeoutMs = 5_000;
const maxJwksBytes = 64 * 1024;
const maxCachedSets = 1_000;

interface CachedSet {
  jwks: JSONWebKeySet;
  fetchedAt: number;
}

const cache = new Map<string, CachedSet>();

async function fetchJwks(url: string, fetch: FetchFunction): Promise<JSONWebKeySet> {
  // Key material over plain http could be swapped on the way; the guard below refuses private hosts.
  if (!url.startsWith('https://')) throw new FaucetError('upstream_error', 'A JWKS URL must be https');
  const response = await outboundFetch(
    url,
    { method: 'GET', headers: { accept: 'application/json' } },
    { fetch, timeoutMs: fetchTimeoutMs },
  );
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new FaucetError('upstream_error', `The JWKS answered HTTP ${response.status}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(await readBodyText(response, maxJwksBytes));
  } catch (error) {
    throw FaucetError.isInstance(error) ? error : new FaucetError('upstream_error', 'The JWKS is not JSON', { cause: error });
  }
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new FaucetError('upstream_error', 'The JWKS has no "keys" array');
  return { keys } as JSONWebKeySet;
}

/** The key set at `url`: cached, or fetched when absent, stale, or (`refresh`) when a kid was missing. */
export async function jwksFor(url: string, fetch: FetchFunction, options: { refresh?: boolean } = {}): Promise<JSONWebKeySet> {
  const now = Date.now();
  const cached = cache.get(url);
  const fresh = cached !== undefined && now - cached.fetchedAt < cacheTtlMs;
  const mayRefetch = cached === undefined || now - cached.fetchedAt >= refetchCooldownMs;
  if (fresh && !(options.refresh && mayRefetch)) return cached.jwks;
  const jwks = await fetchJwks(url, fetch);
  if (cache.size >= maxCachedSets) cache.clear();
  cache.set(url, { jwks, fetchedAt: now });
  return jwks;
}
