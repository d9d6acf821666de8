/**
 * Calls the gateway could not settle: Cloudflare ends `waitUntil` work ~30 s after the client
 * leaves, and an isolate can die between the upstream's answer and the booking. Such a call stays
 * `in_flight` in `gateway_calls`. Once its deadline and the settle grace have passed (the gateway
 * itself books or abandons every call before then), the API's cron books it at its bound: the
 * worst-case tokens its hold was sized for, marked estimated. Its hold outlives this sweep
 * (call-limits.ts), so the booking settles it; the money key makes a late gateway booking a
 * duplicate of this one, never a second charge.
 *
 * It books the call at the prices it was authorized with, recorded on its row by
 * `faucet_authorize_call` (migration 0014): the feature's developer price and open fee, the app's
 * channel share, the gateway's markup and fee; and in the catalog's price period of its
 * authorization (`created_at`). A price changed since applies to later calls only, so the booking
 * stays within the call's hold. A call authorized before 0014 has none of them recorded and is
 * booked at the feature's and app's current rows and this worker's settings, as before.
 *
 * A call with fallbacks (docs/models.md, "Fallback and aliases") may have been answered by any of
 * its candidates, and its record names only the first: it is rated by the one rule for a call at its
 * bound (rate-at-bound.ts, the wallet object's too), at the costliest candidate. The candidates are
 * the fallbacks recorded at authorization, not the feature's current ones.
 */
import { sql } from 'drizzle-orm';
import { abandonCall } from './abandon-call.ts';
import type { Env } from '../env.ts';
import { bookUsage } from '../ledger/book-usage.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { featurePricingFromRow, featurePricingMetadata, ratingSettingsFor, type RouteMode } from '../rating/index.ts';
import { callLimits } from './call-limits.ts';
import { rateAtBound } from './rate-at-bound.ts';

export interface SweepResult {
  booked: number;
  abandoned: number;
}

interface StaleCall {
  id: string;
  money_key: string;
  client_request_id: string;
  app_id: string;
  end_user_id: string;
  feature_key: string;
  route_mode: RouteMode | null;
  provider: string;
  model: string;
  provider_credential_id: string | null;
  bound_input_tokens: number;
  bound_output_tokens: number;
  created_at: Date;
  developer_share_bps: number;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
  /** Null on a call whose authorizing gateway did not record them: this worker's settings. */
  platform_markup_bps: number | null;
  platform_fee_bps: number | null;
  /** The fallbacks (`provider:model`) the call was authorized with; null: none recorded. */
  fallback_models: string[] | null;
  bound_cache_lifetime: '5m' | '1h' | null;
}

export async function sweepStaleCalls(db: SqlDatabase, env: Env, limit = 200): Promise<SweepResult> {
  const { settleGraceSeconds } = callLimits(env);
  const stale = await queryRows<StaleCall>(
    db,
    // `g.developer_share_bps` is recorded on every call authorized since 0014 (with the feature's prices).
    sql`select g.id::text, g.money_key, g.client_request_id, g.app_id::text, g.end_user_id::text, g.feature_key, g.route_mode,
               g.provider, g.model, g.provider_credential_id::text, g.bound_input_tokens, g.bound_output_tokens,
               g.created_at, coalesce(g.developer_share_bps, a.developer_share_bps) as developer_share_bps,
               (case when g.developer_share_bps is null then f.developer_price_per_mtok_usd else g.developer_price_per_mtok_usd end)
                 ::numeric(20, 8)::text as developer_price_per_mtok_usd,
               (case when g.developer_share_bps is null then f.open_fee_usd else g.open_fee_usd end)::numeric(20, 8)::text as open_fee_usd,
               g.platform_markup_bps, g.platform_fee_bps, g.fallback_models, g.bound_cache_lifetime
          from gateway_calls g join apps a on a.id = g.app_id
          left join app_features f on f.app_id = g.app_id and f.feature_key = g.feature_key
         where g.status = 'in_flight' and g.deadline_at + make_interval(secs => ${settleGraceSeconds}::integer) < now()
         order by g.deadline_at limit ${limit}`,
  );
  const result: SweepResult = { booked: 0, abandoned: 0 };
  for (const call of stale) {
    if (call.route_mode === null) {
      // No route was chosen: the call was refused and never reached an upstream.
      if (await abandonCall(db, call.money_key)) result.abandoned += 1;
      continue;
    }
    const pricing = featurePricingFromRow({ developerPricePerMtokUsd: call.developer_price_per_mtok_usd, openFeeUsd: call.open_fee_usd });
    const settings = {
      ...ratingSettingsFor(env, call.developer_share_bps),
      ...(call.platform_markup_bps === null ? {} : { platformMarkupBps: call.platform_markup_bps }),
      ...(call.platform_fee_bps === null ? {} : { platformFeeBps: call.platform_fee_bps }),
    };
    const rated = rateAtBound(
      {
        routeMode: call.route_mode,
        // The call's output bound is the largest over its candidates; rateAtBound caps each at its model's.
        candidates: candidatesOf(call).map((candidate) => ({
          ...candidate,
          inputTokens: call.bound_input_tokens,
          outputTokens: call.bound_output_tokens,
        })),
        // The catalog's price period when the call was authorized (a time-of-day price may have changed since).
        pricedAt: new Date(call.created_at),
        cacheLifetime: call.bound_cache_lifetime,
      },
      pricing,
      settings,
    );
    const booking = await bookUsage(db, {
      requestId: call.money_key,
      clientRequestId: call.client_request_id,
      callId: call.id,
      appId: call.app_id,
      endUserId: call.end_user_id,
      featureKey: call.feature_key,
      rated,
      providerCredentialId: call.provider_credential_id,
      allowReceivable: true,
      metadata: { source: 'stale_call_sweep', feature_pricing: featurePricingMetadata(call.feature_key, pricing) },
    });
    if (booking.outcome === 'booked') result.booked += 1;
  }
  return result;
}

/**
 * The candidates a swept call may have been answered by, as its record keeps them: the first, then
 * each fallback (rateAtBound keeps, on the developer_key route, only the key's provider; the unpriced
 * ones are dropped when rated).
 */
function candidatesOf(call: StaleCall): Array<{ provider: string; model: string }> {
  const first = { provider: call.provider, model: call.model };
  const fallbacks = (call.fallback_models ?? []).flatMap((name) => {
    const colon = name.indexOf(':');
    if (colon <= 0) return [];
    // rateAtBound keeps, on the developer_key route, only the key's provider.
    return [{ provider: name.slice(0, colon), model: name.slice(colon + 1) }];
  });
  return [first, ...fallbacks];
}
