/**
 * Everything the gateway must know before it calls an upstream, in one statement (one database
 * round trip): `faucet_authorize_call` (migrations/functions/faucet_authorize_call.sql) checks the session,
 * the app and the feature (named, or the app's default; not archived; the model allowed), claims the client's request id for this end user, records the call, chooses the
 * route and key (DESIGN §6), reserves a developer key's budget and holds the route's worst case —
 * all keyed by the call's money key (`call:<uuid>`), which the server generated for this call alone —
 * and enforces the app's per-end-user limits (spend per day and month: 402 `budget_exceeded`;
 * requests per minute: 429 `rate_limited` with `retry-after`).
 * This file supplies the prices (from the money module) and the rating settings, which the call's
 * record keeps with the feature's prices (whoever books the call books it as authorized), and turns
 * the outcome into a plan or an error.
 */
import { sql } from 'drizzle-orm';
import type { Env } from '#shared/env.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { abandonCall } from '#shared/calls/abandon-call.ts';
import { queryOne, type SqlDatabase } from '#shared/query.ts';
import { formatUsd, type Usd } from '#shared/money/index.ts';
import { featurePricingFromRow, ratingSettingsFor, type FeaturePricing, type RatingSettings } from '#shared/rating/index.ts';
import type { CloudRouteMode } from '#shared/wire/route-modes.ts';
import type { WalletObjectContract } from '#shared/durable-objects.ts';
import type { LeaseContextRefusal } from '#shared/wallet/lease-context.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import type { FeatureRouting } from '../fallback/feature-routing.ts';
import type { ModelReference } from './parse-model.ts';
import { platformPoolCredential } from './platform-pool.ts';
import { storedKeyCredential, storedKeyRoot } from './stored-key-credential.ts';

export type CallRoute = CloudRouteMode;

export interface AuthorizeInput {
  tokenHash: string;
  /** Undefined: the app's default feature. */
  featureKey: string | undefined;
  call: CallKeys;
  requestedRoute: CloudRouteMode | undefined;
  reference: ModelReference;
  /** The bounds of every candidate the call may try (fallback/hold-candidates.ts): the largest of each. */
  bounds: HoldBounds;
  /** The alias the call named and the fallbacks the bounds were sized for; the statement refuses other ones (`routing_changed`). */
  routing: { alias: string | null; fallbacks: string[] };
}

/** The feature's aliases or fallbacks differ from the ones the gateway passed: nothing was written; ask again with these. */
export class RoutingChanged extends Error {
  constructor(readonly routing: FeatureRouting) {
    super('the feature routing changed');
  }
}

/** A stored key of a fallback provider on the byok route (opened only if that candidate is tried). */
export interface StoredFallbackKey {
  id: string;
  ciphertext: string;
  iv: string;
  key_version: number;
}

/** The keys of one call: the server's own, and the client's correlation id. */
export interface CallKeys {
  callId: string;
  /** `call:<callId>`: the key of the call's hold, booking and budget reservation. */
  moneyKey: string;
  /** The client's x-request-id: echoed back, and the idempotency key within the end user's calls. */
  clientRequestId: string;
  /** SHA-256 of the request as sent, stored to tell a retry from a reuse of the id. */
  fingerprint: string;
  holdTtlSeconds: number;
  maxDurationSeconds: number;
}

export interface CallPlan {
  keys: CallKeys;
  appId: string;
  endUserId: string;
  /** The feature the call used: the one it named, or the app's default. */
  featureKey: string;
  /** The feature's prices and the rating settings at authorization: what the call is booked with. */
  featurePricing: FeaturePricing;
  ratingSettings: RatingSettings;
  /** When the call was authorized: the catalog's price period it is rated in (time-of-day and dated prices). */
  pricedAt: Date;
  /** The feature's cap on output tokens; null = none. */
  maxOutputTokens: number | null;
  routeMode: CallRoute;
  credential: ProviderCredential;
  providerCredentialId: string | null;
  /** The feature's aliases and fallbacks as the statement read them. */
  routing: FeatureRouting;
  /** byok route: the end user's key of each fallback provider other than the call's. */
  fallbackKeys: Record<string, StoredFallbackKey>;
  /** Authorized by the end user's wallet object on its lease (wallet/): settled and abandoned there, not in Postgres. */
  wallet?: { name: string; stub: DurableObjectStub<WalletObjectContract> };
}

/** faucet_authorize_call's answer: the checks it shares with the wallet objects' context (faucet_call_context), then its own. */
export type Outcome =
  | 'authorized'
  | LeaseContextRefusal
  | 'conflict'
  | 'byok_missing'
  | 'developer_key_missing'
  | 'unpriced'
  | 'no_pool'
  | 'budget_exceeded'
  | 'spend_limit_day'
  | 'spend_limit_month'
  | 'rate_limited'
  | 'insufficient_balance';

interface AuthorizeRow {
  outcome: Outcome;
  app_id: string | null;
  end_user_id: string | null;
  developer_share_bps: number | null;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
  route_mode: CallRoute | null;
  credential_id: string | null;
  ciphertext: string | null;
  iv: string | null;
  key_version: number | null;
  feature_key: string | null;
  max_output_tokens: number | null;
  /** The per-end-user limit a refusal names: USD (8 decimals) or calls per minute. */
  refused_limit: string | null;
  retry_after_seconds: number | null;
  model_aliases: Record<string, string> | null;
  fallback_models: string[] | null;
  fallback_keys: Record<string, StoredFallbackKey> | null;
}

const usd = (amount: Usd | null) => (amount === null ? null : formatUsd(amount));

export async function authorizeCall(db: SqlDatabase, env: Env, input: AuthorizeInput): Promise<CallPlan> {
  const { call: keys, reference, bounds } = input;
  const pool = platformPoolCredential(env, reference);
  const settings = ratingSettingsFor(env, null);
  const pricedAt = new Date();
  const row = await queryOne<AuthorizeRow>(
    db,
    sql`select * from faucet_authorize_call(
      ${input.tokenHash}, ${input.featureKey ?? null}::text, ${keys.callId}::uuid, ${keys.moneyKey}, ${keys.clientRequestId}, ${keys.fingerprint},
      ${input.requestedRoute ?? null}::text, ${reference.provider}, ${reference.model},
      ${bounds.worstCaseInputTokens}::integer, ${bounds.worstCaseOutputTokens}::integer,
      ${usd(bounds.platform)}::numeric, ${usd(bounds.developerKeyAtCost)}::numeric, ${pool !== null}::boolean,
      ${keys.holdTtlSeconds}::integer, ${keys.maxDurationSeconds}::integer,
      ${settings.platformMarkupBps}::integer, ${settings.platformFeeBps}::integer,
      ${input.routing.alias}::text, ${JSON.stringify(input.routing.fallbacks)}::jsonb)`,
  );
  const routing = { aliases: row.model_aliases ?? {}, fallbacks: row.fallback_models ?? [] };
  if (row.outcome === 'routing_changed') throw new RoutingChanged(routing);
  if (row.outcome !== 'authorized') throw refusal(row.outcome, input, row);

  const routeMode = row.route_mode as CallRoute;
  const plan = {
    keys,
    appId: row.app_id as string,
    endUserId: row.end_user_id as string,
    featureKey: row.feature_key as string,
    maxOutputTokens: row.max_output_tokens,
    featurePricing: featurePricingFromRow({ developerPricePerMtokUsd: row.developer_price_per_mtok_usd, openFeeUsd: row.open_fee_usd }),
    ratingSettings: { ...settings, channelShareBps: ratingSettingsFor(env, row.developer_share_bps).channelShareBps },
    pricedAt,
    routeMode,
    providerCredentialId: row.credential_id,
    routing,
    fallbackKeys: row.fallback_keys ?? {},
  };
  if (routeMode === 'platform') return { ...plan, credential: pool as ProviderCredential };
  try {
    const key = {
      id: row.credential_id as string,
      ciphertext: row.ciphertext as string,
      iv: row.iv as string,
      keyVersion: row.key_version as number,
    };
    const baseUrl = await storedKeyRoot(db, key.id, reference.entry);
    return { ...plan, credential: await storedKeyCredential(env, reference.provider, key, baseUrl) };
  } catch (error) {
    // A key that cannot be opened: nothing will be called, so nothing stays held.
    await abandonCall(db, keys.moneyKey).catch(() => undefined);
    throw error;
  }
}

/** The error a refused authorization answers (the wallet object's refusals use the same). */
export function refusal(
  outcome: Exclude<Outcome, 'authorized' | 'routing_changed'>,
  input: Pick<AuthorizeInput, 'featureKey' | 'reference' | 'requestedRoute'>,
  row: Pick<AuthorizeRow, 'feature_key' | 'refused_limit' | 'retry_after_seconds'>,
): FaucetError {
  const { provider, model } = input.reference;
  const featureKey = row.feature_key;
  switch (outcome) {
    case 'unauthorized':
      return new FaucetError('unauthorized', 'Session is unknown or expired');
    case 'developer_suspended':
      return new FaucetError('forbidden', "This app's developer is suspended");
    case 'unknown_feature':
      return new FaucetError('invalid_request', `This app has no feature "${input.featureKey}".`);
    case 'no_default_feature':
      return new FaucetError('invalid_request', 'This call names no feature and the app has no default feature.');
    case 'app_archived':
      return new FaucetError('forbidden', 'This app is archived: it takes no new calls.');
    case 'feature_archived':
      return new FaucetError('forbidden', `Feature "${featureKey}" is archived: it takes no new calls.`);
    case 'model_not_allowed':
      return new FaucetError('forbidden', `Model "${provider}:${model}" is not among this feature's allowed models.`);
    case 'conflict':
      return new FaucetError(
        'conflict',
        'This request id is in use by a call in flight or already billed; a retry gets this answer instead of a second charge. Send a new x-request-id for a new call.',
      );
    case 'byok_missing':
      return new FaucetError(
        'invalid_request',
        `route_mode "byok" needs an active BYOK key of yours for provider "${provider}", and there is none.`,
      );
    case 'developer_key_missing':
      return new FaucetError(
        'invalid_request',
        `route_mode "developer_key" needs an active key of the app's developer for provider "${provider}", and there is none.`,
      );
    case 'unpriced':
      if (input.requestedRoute === 'developer_key' && provider === 'custom') {
        return new FaucetError(
          'invalid_request',
          `Model "${provider}:${model}" has no catalog price: a custom server's model is served on route_mode "developer_key" only by a feature that sets developer_price_per_mtok_usd (the price its end users pay).`,
        );
      }
      return input.requestedRoute === 'developer_key'
        ? new FaucetError(
            'invalid_request',
            "This model has no catalog price, so its upstream cost cannot be counted against the developer key's budget.",
          )
        : new FaucetError(
            'invalid_request',
            `Model "${provider}:${model}" has no platform price; it cannot be used on the platform route.`,
          );
    case 'no_pool':
      return new FaucetError(
        'invalid_request',
        `The platform has no key for provider "${provider}"; this model is not available on the platform route.`,
      );
    case 'budget_exceeded':
      return new FaucetError(
        'budget_exceeded',
        `The developer's ${provider} key has reached its monthly budget; route_mode "developer_key" cannot be served until next month or a higher budget.`,
      );
    case 'spend_limit_day':
      return new FaucetError(
        'budget_exceeded',
        `This call could take you past this app's spend limit per user of ${row.refused_limit} USD per day (UTC), counting your calls in flight at their worst case; it resets at 00:00 UTC.`,
      );
    case 'spend_limit_month':
      return new FaucetError(
        'budget_exceeded',
        `This call could take you past this app's spend limit per user of ${row.refused_limit} USD per calendar month (UTC), counting your calls in flight at their worst case; it resets on the 1st at 00:00 UTC.`,
      );
    case 'rate_limited': {
      const retryAfter = String(row.retry_after_seconds ?? 1);
      return new FaucetError(
        'rate_limited',
        `This app allows ${row.refused_limit} calls per minute per user; try again in ${retryAfter} s.`,
        { headers: { 'retry-after': retryAfter } },
      );
    }
    case 'insufficient_balance':
      return new FaucetError('insufficient_balance', 'The available balance does not cover the worst-case cost of this call.');
  }
}
