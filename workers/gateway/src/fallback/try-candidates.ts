/**
 * The attempts of one call (docs/models.md, "Fallback and aliases"). Candidates are tried in order;
 * the next one only when an attempt failed before its first byte with a connect error, a timeout, a
 * 429 or a 5xx (`upstream_error`, `upstream_timeout`, `rate_limited`). A 4xx other than 429 is the
 * request's fault: no fallback, its error is the call's. Once an attempt has answered — a completion,
 * or a stream the upstream accepted, which is what is forwarded — nothing is retried. A 429's
 * retry-after is waited out before the next attempt when it is at most 2 s and the call's deadline
 * allows; otherwise the next candidate is tried at once. Each attempt sends its own
 * `x-client-request-id` (`<call id>` first, `<call id>:<n>` for the candidate at position n), so
 * the upstream audit tells attempts apart. A candidate whose circuit is open, that has no key on
 * the call's route, or whose worst case the hold does not cover is skipped, and listed so. A byok
 * fallback to an azure or custom key is called at the root registered with that key.
 */
import type { Env } from '#shared/env.ts';
import { intSetting } from '#shared/env.ts';
import type { SqlDatabase } from '#shared/query.ts';
import type { CallAttempt } from '#shared/wire/faucet-object.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { ProviderAdapter, ProviderCredential } from '../providers/provider.ts';
import type { CallPlan } from '../routing/call-plan.ts';
import { platformPoolCredential } from '../routing/platform-pool.ts';
import { storedKeyCredential, storedKeyRoot } from '../routing/stored-key-credential.ts';
import { type CircuitBreaker, circuitBreaker, type CircuitSettings } from './circuit-breaker.ts';
import { type Candidate, covered } from './hold-candidates.ts';

export const maxRetryAfterWaitMs = 2_000;

export interface AttemptContext {
  env: Env;
  /** Where a byok fallback's registered root (azure, custom) is read. */
  database: SqlDatabase;
  plan: CallPlan;
  /** The provider the statement chose the route and key for (the first candidate's). */
  primaryProvider: string;
  /** What the statement held for: the bounds each fallback must stay within. */
  held: HoldBounds;
  adapterFor(candidate: Candidate): ProviderAdapter;
  /** Aborted at the call's deadline or when the client went away: no further attempt. */
  signal: AbortSignal;
  /** Epoch milliseconds of the call's deadline. */
  deadlineAt: number;
  breaker?: CircuitBreaker;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface Answered<T> {
  value: T;
  candidate: Candidate;
  /** The stored key the answering attempt used (null: the platform pool). */
  credentialId: string | null;
  attempts: CallAttempt[];
}

/** Every candidate failed or was skipped: the last error, the attempts, and the last candidate tried (null: none was). */
export class AttemptsFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly attempts: CallAttempt[],
    readonly lastTried: Candidate | null,
  ) {
    super('every candidate failed');
  }
}

export function circuitSettings(env: Env): CircuitSettings {
  return { failures: Math.max(1, intSetting(env.CIRCUIT_FAILURES, 5)), cooldownMs: intSetting(env.CIRCUIT_COOLDOWN_MS, 30_000) };
}

const retryable = new Set(['upstream_error', 'upstream_timeout', 'rate_limited']);

export async function tryCandidates<T>(
  context: AttemptContext,
  candidates: Candidate[],
  send: (adapter: ProviderAdapter, credential: ProviderCredential, attemptId: string, candidate: Candidate) => Promise<T>,
): Promise<Answered<T>> {
  const { plan } = context;
  const breaker = context.breaker ?? circuitBreaker;
  const settings = circuitSettings(context.env);
  const attempts: CallAttempt[] = [];
  // Made only when no candidate answered (an error captures a stack trace: not on every call's path).
  let lastError: unknown;
  let lastTried: Candidate | null = null;
  for (const [index, candidate] of candidates.entries()) {
    const named = { model: candidate.reference.model, provider: candidate.reference.provider };
    const route =
      index === 0 ? { credential: plan.credential, credentialId: plan.providerCredentialId } : await fallbackRoute(context, candidate);
    if (route === null) {
      attempts.push({ ...named, outcome: 'skipped_no_route' });
      continue;
    }
    const upstream = `${candidate.reference.provider} ${route.credential.baseUrl}`;
    if (!breaker.admit(upstream)) {
      attempts.push({ ...named, outcome: 'skipped_circuit_open' });
      lastError = new FaucetError('upstream_error', `${candidate.reference.provider} is failing repeatedly; it is paused for a while.`);
      continue;
    }
    lastTried = candidate;
    try {
      const attemptId = index === 0 ? plan.keys.callId : `${plan.keys.callId}:${index}`;
      const value = await send(context.adapterFor(candidate), route.credential, attemptId, candidate);
      breaker.succeeded(upstream);
      attempts.push({ ...named, outcome: 'ok' });
      return { value, candidate, credentialId: route.credentialId, attempts };
    } catch (error) {
      lastError = error;
      const code = FaucetError.isInstance(error) ? error.code : 'internal_error';
      const status = FaucetError.isInstance(error) ? error.upstreamStatus : undefined;
      attempts.push({ ...named, outcome: 'error', ...(status === undefined ? {} : { status }), error_code: code });
      if (code === 'upstream_error' || code === 'upstream_timeout') breaker.failed(upstream, settings);
      else breaker.inconclusive(upstream);
      if (!retryable.has(code) || context.signal.aborted) throw new AttemptsFailed(error, attempts, lastTried);
      await waitRetryAfter(context, error as FaucetError);
    }
  }
  throw new AttemptsFailed(
    lastError ?? new FaucetError('upstream_error', 'No upstream could take this call: every candidate was skipped.'),
    attempts,
    lastTried,
  );
}

/** A fallback's key on the call's route; null when it has none or the hold does not cover it. */
async function fallbackRoute(
  context: AttemptContext,
  candidate: Candidate,
): Promise<{ credential: ProviderCredential; credentialId: string | null } | null> {
  const { plan } = context;
  if (!covered(plan.routeMode, context.held, candidate)) return null;
  const provider = candidate.reference.provider;
  const sameProvider = provider === context.primaryProvider;
  if (plan.routeMode === 'platform') {
    const pool = platformPoolCredential(context.env, candidate.reference);
    return pool === null ? null : { credential: pool, credentialId: null };
  }
  if (sameProvider) return { credential: plan.credential, credentialId: plan.providerCredentialId };
  // developer_key: only the key whose budget the statement reserved. byok: the end user's key of that provider.
  const stored = plan.routeMode === 'byok' ? plan.fallbackKeys[provider] : undefined;
  if (stored === undefined) return null;
  const key = { id: stored.id, ciphertext: stored.ciphertext, iv: stored.iv, keyVersion: stored.key_version };
  // An azure or custom key is called at the root registered with it, as the first candidate's is (wallet/authorize-on-lease.ts).
  const baseUrl = await storedKeyRoot(context.database, stored.id, candidate.reference.entry);
  return { credential: await storedKeyCredential(context.env, provider, key, baseUrl), credentialId: stored.id };
}

async function waitRetryAfter(context: AttemptContext, error: FaucetError): Promise<void> {
  const header = error.headers['retry-after'];
  if (header === undefined) return;
  const ms = Number(header) * 1000;
  if (!(ms > 0 && ms <= maxRetryAfterWaitMs && Date.now() + ms < context.deadlineAt)) return;
  await (context.sleep ?? sleep)(ms, context.signal);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
