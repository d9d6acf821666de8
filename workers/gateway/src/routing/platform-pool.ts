/**
 * The platform pool's key for a provider (a Worker secret). Stored keys (a user's BYOK key, the
 * developer's key) are chosen by `decideCall` and opened by `openStoredKey`.
 */
import type { Env } from '#shared/env.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import { loopbackAllowance, platformBaseUrl } from '#shared/upstream/loopback-allowance.ts';
import type { ModelReference } from './parse-model.ts';

/**
 * The platform's own key for a provider, from the Worker secrets; null when it has none. Its API
 * root may be set by the setting its catalog entry names (`OPENAI_BASE_URL`, `AZURE_OPENAI_BASE_URL`), and outside production may name the one allowed
 * loopback port (a local fake upstream).
 */
export function platformPoolCredential(env: Env, reference: ModelReference): ProviderCredential | null {
  const baseUrl = platformBaseUrl(env, reference.entry);
  const secret = reference.entry.poolKeySecret;
  if (secret === null) return { apiKey: null, baseUrl: reference.entry.baseUrl };
  const apiKey = env[secret];
  // A provider whose root each account names (Azure, custom) has no pool until the operator names one.
  if (baseUrl === '') return null;
  return typeof apiKey === 'string' && apiKey !== '' ? { apiKey, baseUrl, allowLoopback: loopbackAllowance(env) } : null;
}
