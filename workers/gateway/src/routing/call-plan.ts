/**
 * What an authorized call carries from its wallet object's decision to its upstream and its
 * settlement (the plan), and the error each refusal answers. The decision itself is `decideCall`
 * (workers/shared/authorize/decide-call.ts), taken by the end user's wallet object
 * (wallet/authorize-on-lease.ts).
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { FeaturePricing, RatingSettings } from '#shared/rating/index.ts';
import type { CloudRouteMode } from '#shared/wire/route-modes.ts';
import type { WalletObjectContract } from '#shared/durable-objects.ts';
import type { CallRefusal } from '#shared/authorize/decide-call.ts';
import type { StoredFallbackKey } from '#shared/wallet/lease-context.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import type { FeatureRouting } from '../fallback/feature-routing.ts';
import type { ModelReference } from './parse-model.ts';

export type { StoredFallbackKey };

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
  /** The end user's wallet object that authorized it on its lease (wallet/): settled and abandoned there. */
  /** `fresh`: a new stub of the same object, for a retry after the object restarted (a broken stub stays broken). */
  wallet: { name: string; stub: DurableObjectStub<WalletObjectContract>; fresh(): DurableObjectStub<WalletObjectContract> };
}

/** What a refusal names: the feature, and the per-end-user limit (USD, or calls per minute) with its retry-after. */
export interface RefusalDetail {
  feature_key: string | null;
  refused_limit: string | null;
  retry_after_seconds: number | null;
}

/** The error a refused call answers. */
export function refusal(
  outcome: Exclude<CallRefusal, 'routing_changed'>,
  input: Pick<AuthorizeInput, 'featureKey' | 'reference' | 'requestedRoute'>,
  row: RefusalDetail,
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
