/**
 * Where a call's provider key comes from (DESIGN §6). The platform pool key is a Worker secret;
 * stored keys (a user's BYOK key, the developer's key) are found by SQL folded into the one
 * authorize statement and opened (decrypted) in code. The provider-keys module supplies its own
 * `CredentialLookup`; the chat-completions handler never changes for it.
 */
import type { SQL } from 'drizzle-orm';
import type { Env } from '../../../shared/env.ts';
import { FaucetError } from '../../../shared/errors.ts';
import type { Usd } from '../../../shared/money/index.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import { loopbackAllowance, platformBaseUrl } from '../upstream/loopback-allowance.ts';
import type { ModelReference } from './parse-model.ts';

export type StoredCredentialKind = 'byok' | 'developer_key';

/** A stored key the route may use, as the authorize statement returns it. */
export interface StoredCredentialCandidate {
  kind: StoredCredentialKind;
  credentialId: string;
  /** The columns the lookup's SQL put into `sealed` (ciphertext, IV, key version, base URL, …). */
  sealed: Record<string, unknown>;
}

/** The call a lookup's candidates are for (e.g. to reserve a developer key's budget in the same statement). */
export interface CandidateCall {
  requestId: string;
  requestedRoute: 'platform' | StoredCredentialKind | null;
  /** An upper bound of the call's upstream cost (the platform hold's worst-case retail); null when the model has no price. */
  costBoundUsd: Usd | null;
}

export interface CredentialLookup {
  /**
   * The body of the `candidates` CTE: rows `(kind text, credential_id uuid, sealed jsonb)` of the
   * usable stored keys for `provider`, at most one per kind. It may read the CTEs `session`
   * (`app_id`, `end_user_id`, `developer_id`) and `feature` (`route_policy`, …). Null when there are no stored keys at all.
   */
  candidatesSql(provider: string, call: CandidateCall): SQL | null;
  /** Turns the chosen candidate into the key (and API root) to call the provider with. */
  open(candidate: StoredCredentialCandidate, env: Env, reference: ModelReference): Promise<ProviderCredential>;
}

/** Until provider keys exist: every call goes to the platform pool (or the keyless mock). */
export const platformPoolOnly: CredentialLookup = {
  candidatesSql: () => null,
  open: () => Promise.reject(new FaucetError('internal_error', 'No stored provider keys are configured')),
};

/**
 * The platform's own key for a provider, from the Worker secrets; null when it has none. Its API
 * root may be overridden (`OPENAI_BASE_URL`), and outside production may name the one allowed
 * loopback port (a local fake upstream).
 */
export function platformPoolCredential(env: Env, reference: ModelReference): ProviderCredential | null {
  const baseUrl = platformBaseUrl(env, reference.provider, reference.entry.baseUrl);
  const secret = reference.entry.poolKeySecret;
  if (secret === null) return { apiKey: null, baseUrl: reference.entry.baseUrl };
  const apiKey = env[secret];
  return typeof apiKey === 'string' && apiKey !== '' ? { apiKey, baseUrl, allowLoopback: loopbackAllowance(env) } : null;
}
