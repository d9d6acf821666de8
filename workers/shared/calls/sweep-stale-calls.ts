/**
 * Calls the gateway could not settle: Cloudflare ends `waitUntil` work ~30 s after the client
 * leaves, and an isolate can die between the upstream's answer and the booking. Such a call stays
 * `in_flight` in `gateway_calls`. Once its deadline and the settle grace have passed (the gateway
 * itself books or abandons every call before then), the API's cron books it at its bound: the
 * worst-case tokens its hold was sized for, marked estimated. Its hold outlives this sweep
 * (call-limits.ts), so the booking settles it; the money key makes a late gateway booking a
 * duplicate of this one, never a second charge.
 */
import { sql } from 'drizzle-orm';
import { abandonCall } from './abandon-call.ts';
import type { Env } from '../env.ts';
import { bookUsage } from '../ledger/book-usage.ts';
import { queryRows, type LedgerDatabase } from '../ledger/database.ts';
import { featurePricingFromRow, rateUsage, ratingSettingsFor, type RouteMode } from '../rating/index.ts';
import { callLimits } from './call-limits.ts';

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
  developer_share_bps: number;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
}

export async function sweepStaleCalls(db: LedgerDatabase, env: Env, limit = 200): Promise<SweepResult> {
  const { settleGraceSeconds } = callLimits(env);
  const stale = await queryRows<StaleCall>(
    db,
    sql`select g.id::text, g.money_key, g.client_request_id, g.app_id::text, g.end_user_id::text, g.feature_key, g.route_mode,
               g.provider, g.model, g.provider_credential_id::text, g.bound_input_tokens, g.bound_output_tokens,
               a.developer_share_bps, f.developer_price_per_mtok_usd::numeric(20, 8)::text as developer_price_per_mtok_usd,
               f.open_fee_usd::numeric(20, 8)::text as open_fee_usd
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
    const rated = rateUsage(
      {
        routeMode: call.route_mode,
        provider: call.provider,
        model: call.model,
        inputTokens: call.bound_input_tokens,
        outputTokens: call.bound_output_tokens,
        estimated: true,
      },
      featurePricingFromRow({ developerPricePerMtokUsd: call.developer_price_per_mtok_usd, openFeeUsd: call.open_fee_usd }),
      ratingSettingsFor(env, call.developer_share_bps),
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
      metadata: { source: 'stale_call_sweep' },
    });
    if (booking.outcome === 'booked') result.booked += 1;
  }
  return result;
}
