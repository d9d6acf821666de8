/**
 * Everything the gateway must know before it calls an upstream, in one statement (one database
 * round trip): the session (unknown or expired → no row), the feature of the session's app, the
 * stored keys the route may use, the route (DESIGN §6), the claim of the client's request id for
 * this end user (the idempotency key; a second call under it is refused while the first is in
 * flight or billed), the durable record of the call, and the hold of the worst-case retail price on
 * whichever route is chosen (the platform price; the developer's per-million price, or the catalog
 * cost, on developer_key; the open fee on byok). Hold, budget reservation and booking are keyed by
 * the call's money key (`call:<uuid>`), which the server generated for this call alone. A route
 * whose worst case is zero (byok without a fee) holds nothing.
 */
import { sql } from 'drizzle-orm';
import type { Env } from '../../../shared/env.ts';
import { FaucetError } from '../../../shared/errors.ts';
import type { LedgerDatabase } from '../../../shared/ledger/database.ts';
import { abandonCall } from '../../../shared/calls/abandon-call.ts';
import { formatUsd, type Usd } from '../../../shared/money/index.ts';
import { featurePricingFromRow, type FeaturePricing } from '../../../shared/rating/index.ts';
import type { ProviderCredential } from '../providers/provider.ts';
import type { RequestedRouteMode } from '../routes/chat-completions-body.ts';
import { platformPoolCredential, type CredentialLookup, type StoredCredentialKind } from './credential-lookup.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { ModelReference } from './parse-model.ts';

export interface AuthorizeInput {
  tokenHash: string;
  featureKey: string;
  call: CallKeys;
  requestedRoute: Exclude<RequestedRouteMode, 'local'> | undefined;
  reference: ModelReference;
  /** The platform route's worst-case retail cost; null when the catalog has no price for the model. */
  holdAmount: Usd | null;
  /** developer_key's worst-case retail when the feature has no price of its own (= catalog cost). */
  developerKeyAtCost: Usd | null;
  /** Worst-case input + output tokens, for a feature's own per-million developer price. */
  worstCaseTokens: number;
  worstCaseInputTokens: number;
  worstCaseOutputTokens: number;
  provider: string;
  model: string;
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
  developerShareBps: number;
  featureKey: string;
  featurePricing: FeaturePricing;
  routeMode: 'platform' | StoredCredentialKind;
  credential: ProviderCredential;
  providerCredentialId: string | null;
  /** True when a hold was reserved: it must be settled or released. */
  held: boolean;
}

interface AuthorizeRow {
  app_id: string;
  end_user_id: string;
  developer_share_bps: number;
  feature_key: string | null;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
  credential_kind: StoredCredentialKind | null;
  credential_id: string | null;
  sealed: Record<string, unknown> | null;
  claimed: boolean;
  hold_amount: string | null;
  hold_outcome: 'reserved' | 'duplicate' | 'insufficient_balance' | null;
}

const noCandidates = sql`select null::text as kind, null::uuid as credential_id, null::jsonb as sealed where false`;

export async function authorizeCall(db: LedgerDatabase, env: Env, lookup: CredentialLookup, input: AuthorizeInput): Promise<CallPlan> {
  const pool = platformPoolCredential(env, input.reference);
  const requested = input.requestedRoute ?? null;
  const platformReady = pool !== null && input.holdAmount !== null;
  const platformHold = input.holdAmount === null ? '0' : formatUsd(input.holdAmount);
  const atCost = input.developerKeyAtCost === null ? null : formatUsd(input.developerKeyAtCost);
  const keys = input.call;
  const { rows } = await db.execute(sql`
    with session as (
      select s.app_id, s.end_user_id, a.developer_id, a.developer_share_bps
        from virtual_sessions s join apps a on a.id = s.app_id
       where s.token_hash = ${input.tokenHash} and s.expires_at > now() and s.revoked_at is null
    ),
    feature as (
      select f.feature_key, f.route_policy, f.developer_price_per_mtok_usd::text, f.open_fee_usd::text
        from app_features f join session on f.app_id = session.app_id
       where f.feature_key = ${input.featureKey}
    ),
    candidates as (${lookup.candidatesSql(input.reference.provider, { requestId: keys.moneyKey, requestedRoute: requested, costBoundUsd: input.holdAmount }) ?? noCandidates}),
    chosen as (
      select c.kind, c.credential_id, c.sealed from candidates c cross join feature f
       where (c.kind = 'byok' and (${requested}::text = 'byok' or (${requested}::text is null and f.route_policy = 'byok_first')))
          or (c.kind = 'developer_key' and (${requested}::text is null or ${requested}::text = 'developer_key'))
       order by case c.kind when 'byok' then 0 else 1 end
       limit 1
    ),
    route as (
      select case
               -- A developer key refused for its budget is chosen only to report why: nothing to hold.
               when chosen.kind = 'developer_key' and chosen.sealed ? 'refused' then 0
               when chosen.kind = 'developer_key' then coalesce(
                 ceil(feature.developer_price_per_mtok_usd::numeric * ${input.worstCaseTokens}::bigint / 1000000 * 100000000) / 100000000,
                 ${atCost}::numeric, 0)
               when chosen.kind = 'byok' then coalesce(feature.open_fee_usd::numeric, 0)
               when (${requested}::text is null or ${requested}::text = 'platform') and ${platformReady}::boolean
                 then ${platformHold}::numeric
             end as hold_amount,
             coalesce(chosen.kind, case when (${requested}::text is null or ${requested}::text = 'platform') and ${platformReady}::boolean
                                        then 'platform' end) as route_mode
        from feature left join chosen on true
    ),
    -- The idempotency claim and the durable record of the call; on a conflict (the same client id
    -- in flight or billed for this user) nothing is inserted and nothing will be held.
    claimed as (
      insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                 provider, model, provider_credential_id, bound_input_tokens, bound_output_tokens, deadline_at)
      select ${keys.callId}::uuid, ${keys.moneyKey}, ${keys.clientRequestId}, ${keys.fingerprint}, session.app_id, session.end_user_id,
             feature.feature_key, route.route_mode, ${input.provider}, ${input.model}, chosen.credential_id,
             ${input.worstCaseInputTokens}::integer, ${input.worstCaseOutputTokens}::integer,
             now() + make_interval(secs => ${keys.maxDurationSeconds}::integer)
        from session cross join feature cross join route left join chosen on true
      on conflict (end_user_id, client_request_id) where status <> 'abandoned' do nothing
      returning id
    )
    select session.app_id, session.end_user_id, session.developer_share_bps,
           feature.feature_key, feature.developer_price_per_mtok_usd, feature.open_fee_usd,
           chosen.kind as credential_kind, chosen.credential_id, chosen.sealed,
           exists (select 1 from claimed) as claimed,
           route.hold_amount::text as hold_amount,
           case when feature.feature_key is not null and route.hold_amount > 0 and exists (select 1 from claimed)
                then (select h.outcome from faucet_reserve_hold(session.end_user_id, ${keys.moneyKey},
                        route.hold_amount, ${keys.holdTtlSeconds}::integer) h)
           end as hold_outcome
      from session left join feature on true left join chosen on true left join route on true`);

  const row = rows[0] as AuthorizeRow | undefined;
  if (row === undefined) throw new FaucetError('unauthorized', 'Session is unknown or expired');
  if (!hasFeature(row)) throw new FaucetError('invalid_request', `This app has no feature "${input.featureKey}".`);
  if (!row.claimed) {
    // Nothing was held; a developer key's budget may have been reserved in the candidates CTE.
    await abandonCall(db, keys.moneyKey);
    throw new FaucetError('conflict', 'This request id is in use by a call in flight or already billed; a retry gets this answer instead of a second charge. Send a new x-request-id for a new call.');
  }

  try {
    return await planFrom(row, input, env, lookup, pool);
  } catch (error) {
    // Refused after the claim: free whatever the statement reserved and give the request id back.
    await abandonCall(db, keys.moneyKey).catch(() => undefined);
    throw error;
  }
}

async function planFrom(
  row: AuthorizeRow & { feature_key: string },
  input: AuthorizeInput,
  env: Env,
  lookup: CredentialLookup,
  pool: ProviderCredential | null,
): Promise<CallPlan> {
  const requested = input.requestedRoute ?? null;
  const base = {
    keys: input.call,
    appId: row.app_id,
    endUserId: row.end_user_id,
    developerShareBps: row.developer_share_bps,
    featureKey: row.feature_key,
    featurePricing: featurePricingFromRow({ developerPricePerMtokUsd: row.developer_price_per_mtok_usd, openFeeUsd: row.open_fee_usd }),
  };

  if (row.credential_kind !== null && row.credential_id !== null) {
    const credential = await lookup.open(
      { kind: row.credential_kind, credentialId: row.credential_id, sealed: row.sealed ?? {} },
      env,
      input.reference,
    );
    const held = holdOutcome(row);
    return { ...base, routeMode: row.credential_kind, credential, providerCredentialId: row.credential_id, held };
  }
  if (requested === 'byok' || requested === 'developer_key') {
    const what = requested === 'byok' ? 'BYOK key of yours' : "key of the app's developer";
    throw new FaucetError('invalid_request', `route_mode "${requested}" needs an active ${what} for provider "${input.reference.provider}", and there is none.`);
  }
  if (input.holdAmount === null) {
    throw new FaucetError('invalid_request', `Model "${input.reference.provider}:${input.reference.model}" has no platform price; it cannot be used on the platform route.`);
  }
  if (pool === null) {
    throw new FaucetError('invalid_request', `The platform has no key for provider "${input.reference.provider}"; this model is not available on the platform route.`);
  }
  if (row.hold_outcome === null) throw new FaucetError('internal_error', 'The hold was not placed');
  const held = holdOutcome(row);
  return { ...base, routeMode: 'platform', credential: pool, providerCredentialId: null, held };
}

function hasFeature(row: AuthorizeRow): row is AuthorizeRow & { feature_key: string } {
  return row.feature_key !== null;
}

/** True when a hold was reserved; refusals become errors (the caller abandons the call). */
function holdOutcome(row: AuthorizeRow): boolean {
  if (row.hold_outcome === null || row.hold_outcome === 'reserved') return row.hold_outcome === 'reserved';
  if (row.hold_outcome === 'insufficient_balance') {
    throw new FaucetError('insufficient_balance', 'The available balance does not cover the worst-case cost of this call.');
  }
  throw new FaucetError('conflict', 'This call already holds money; send a new x-request-id.');
}

export function authorizeHoldInput(
  bounds: HoldBounds,
): Pick<AuthorizeInput, 'holdAmount' | 'developerKeyAtCost' | 'worstCaseTokens' | 'worstCaseInputTokens' | 'worstCaseOutputTokens'> {
  return {
    holdAmount: bounds.platform,
    developerKeyAtCost: bounds.developerKeyAtCost,
    worstCaseTokens: bounds.worstCaseTokens,
    worstCaseInputTokens: bounds.worstCaseInputTokens,
    worstCaseOutputTokens: bounds.worstCaseOutputTokens,
  };
}
