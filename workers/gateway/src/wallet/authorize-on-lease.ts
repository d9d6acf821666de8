/**
 * The gateway's side of a call's authorization (docs/edge.md): the session token names its wallet,
 * and that wallet's object decides the call (decideCall), with no Postgres round trip when its lease
 * covers it: the platform route, the byok route with the end user's own key, or the developer_key
 * route with the developer's (the object leases part of its monthly budget). It answers
 * `unavailable` when the call needed Postgres and it could not be reached (503, retry-after).
 */
import type { Env } from '#shared/env.ts';
import type { WalletCallDecision, WalletCallRequest, WalletObjectContract } from '#shared/durable-objects.ts';
import { walletOfToken } from '#shared/auth/session-token.ts';
import { databaseUnavailable } from '#shared/database-unreachable.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { formatUsd } from '#shared/money/index.ts';
import { featurePricingFromRow, ratingSettingsFor } from '#shared/rating/index.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { Candidate } from '../fallback/hold-candidates.ts';
import { takeUnsent } from './unsent-settlements.ts';
import { platformPoolCredential } from '../routing/platform-pool.ts';
import { keyRoot, storedKeyCredential } from '../routing/stored-key-credential.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import { refusal, RoutingChanged, type AuthorizeInput, type CallPlan } from '../routing/call-plan.ts';

export type WalletStub = DurableObjectStub<WalletObjectContract>;

/**
 * The wallet object a call's token names. A token of the older form (before tokens named their
 * wallet; sessions live 15 minutes) names none: 401, mint a new session.
 */
export function walletOf(env: Env, token: string): { name: string; stub: WalletStub; fresh(): WalletStub } {
  const name = walletOfToken(token);
  if (name === null) {
    throw new FaucetError('unauthorized', 'This session token is of an older form the gateway no longer accepts: mint a new session.');
  }
  // Every gateway deployment binds WALLET (wrangler.toml); its absence is a broken deployment.
  const namespace = env.WALLET;
  if (namespace === undefined) throw new Error('the gateway has no WALLET binding');
  const fresh = () => namespace.get(namespace.idFromName(name));
  return { name, stub: fresh(), fresh };
}

export interface LeaseAuthorizeInput extends AuthorizeInput {
  /** For the request log, should the object refuse the call. */
  log?: WalletCallRequest['log'];
  bounds: HoldBounds;
  candidates: ReadonlyArray<Pick<Candidate, 'reference' | 'bounds'>>;
}

/** The plan the wallet's object authorized, or the error of its refusal. */
export async function authorizeOnLease(
  env: Env,
  wallet: { name: string; stub: WalletStub; fresh(): WalletStub },
  input: LeaseAuthorizeInput,
): Promise<CallPlan> {
  const { call: keys, reference, bounds } = input;
  const pool = platformPoolCredential(env, reference);
  const settings = ratingSettingsFor(env, null);
  const pricedAt = new Date();
  // Settlements of this wallet's calls answered here and not yet sent ride along: the object takes
  // them before it judges this call.
  const carried = takeUnsent(wallet.name);
  const decision = await carried.riding<WalletCallDecision>(
    wallet.stub.authorize({
      wallet: wallet.name,
      ...(carried.settlements.length === 0 ? {} : { settlements: carried.settlements }),
      ...(input.log === undefined ? {} : { log: input.log }),
      tokenHash: input.tokenHash,
      featureKey: input.featureKey ?? null,
      requestedRoute: input.requestedRoute ?? null,
      provider: reference.provider,
      model: reference.model,
      alias: input.routing.alias,
      fallbacks: input.routing.fallbacks,
      platformHold: bounds.platform === null ? null : formatUsd(bounds.platform),
      catalogCost: bounds.developerKeyAtCost === null ? null : formatUsd(bounds.developerKeyAtCost),
      poolAvailable: pool !== null,
      call: {
        id: keys.callId,
        moneyKey: keys.moneyKey,
        clientRequestId: keys.clientRequestId,
        fingerprint: keys.fingerprint,
        boundInputTokens: bounds.worstCaseInputTokens,
        boundOutputTokens: bounds.worstCaseOutputTokens,
        maxDurationSeconds: keys.maxDurationSeconds,
        platformMarkupBps: settings.platformMarkupBps,
        platformFeeBps: settings.platformFeeBps,
        authorizedAt: pricedAt.getTime(),
        candidates: input.candidates.map((candidate) => ({
          provider: candidate.reference.provider,
          model: candidate.reference.model,
          boundInputTokens: (candidate.bounds ?? bounds).worstCaseInputTokens,
          boundOutputTokens: (candidate.bounds ?? bounds).worstCaseOutputTokens,
        })),
        cacheLifetime: bounds.cacheLifetime,
      },
      // Only the tests' objects need it (each test file has a database of its own, named by the test
      // harness's bindings, which only the test configuration has — a test may set ENVIRONMENT to
      // production to test what production does); in production the object reads its own DATABASE_URL
      // and the secret never leaves the worker's environment.
      databaseUrl: env.ENVIRONMENT === 'test' || 'TEST_DATABASE_URL_PREFIX' in env ? env.DATABASE_URL : undefined,
    }),
  );
  if (decision.outcome === 'unavailable') throw databaseUnavailable();
  if (decision.outcome === 'routing_changed') throw new RoutingChanged(decision.routing);
  if (decision.outcome === 'refused') {
    throw refusal(decision.refusal, input, {
      feature_key: decision.featureKey,
      refused_limit: decision.refusedLimit ?? null,
      retry_after_seconds: decision.retryAfterSeconds ?? null,
    });
  }
  let credential = pool as ProviderCredential;
  let providerCredentialId: string | null = null;
  if (decision.routeMode !== 'platform') {
    // The end user's own key or the developer's, opened here; at the
    // root registered with it for providers without a common one (azure, custom).
    const key = decision.routeKey as NonNullable<typeof decision.routeKey>;
    try {
      credential = await storedKeyCredential(env, reference.provider, key, keyRoot(reference.entry, key.baseUrl));
    } catch (error) {
      // A key that cannot be opened: nothing will be called, so nothing stays reserved.
      await wallet.stub.abandon(keys.callId).catch(() => undefined);
      throw error;
    }
    providerCredentialId = key.id;
  }
  return {
    keys,
    appId: decision.appId,
    endUserId: decision.endUserId,
    featureKey: decision.featureKey,
    maxOutputTokens: decision.maxOutputTokens,
    featurePricing: featurePricingFromRow({ developerPricePerMtokUsd: decision.developerPricePerMtokUsd, openFeeUsd: decision.openFeeUsd }),
    ratingSettings: { ...settings, channelShareBps: ratingSettingsFor(env, decision.developerShareBps).channelShareBps },
    pricedAt,
    routeMode: decision.routeMode,
    credential,
    providerCredentialId,
    routing: decision.routing,
    fallbackKeys: decision.fallbackKeys,
    wallet,
  };
}
