import { createRoute, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ServiceApp } from '#shared/app.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { timingSafeEqual } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { bookUsage, queryRows } from '#shared/ledger/index.ts';
import { formatUsd, usdStringSchema } from '#shared/money/index.ts';
import { usageReportSchema } from '#shared/wire/usage-report.ts';
import { errorResponses } from '#shared/openapi.ts';
import { featurePricingFromRow, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';

/** Feature key recorded when a local report names none. */
const UNSPECIFIED_FEATURE = 'unspecified';
// The wire contract's schema (strict: a report can never carry prompt text), documented here.
const UsageReport = usageReportSchema.openapi('LocalUsageReport');

const Recorded = z
  .object({
    request_id: z.string(),
    recorded: z.boolean().openapi({ description: 'false: this request id was recorded before; nothing changed' }),
    route_mode: z.literal('local'),
    charge: z.object({ currency: z.literal('USD'), amount_usd: usdStringSchema, upstream_cost_usd: usdStringSchema }),
  })
  .openapi('LocalUsageRecorded');

const route = createRoute({
  method: 'post',
  path: '/v1/usage/local',
  summary: 'Record a local model call reported by the bridge (zero upstream cost; idempotent per request_id)',
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: UsageReport } } } },
  responses: {
    200: { description: 'Recorded (or recorded before)', content: { 'application/json': { schema: Recorded } } },
    ...errorResponses(400, 401, 402, 403, 404, 409, 413, 429),
  },
});

/**
 * Local reports book under their own key space, scoped to the reporting user: a report can never
 * claim (and so zero out) a gateway call's booking, whose keys are `call:<uuid>`.
 */
export function localUsageKey(endUserId: string, requestId: string): string {
  return `local:${endUserId}:${requestId}`;
}

interface PricingRow {
  developer_share_bps: number;
  feature_found: boolean;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
}

export function registerUsageLocalRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const report = c.req.valid('json');
    const session = c.var.session;
    if (report.public_app_id !== session.publicAppId) {
      throw new FaucetError('forbidden', 'public_app_id does not match the session');
    }
    // Only the server can compute a user's ref, so a report cannot name (or guess) anyone but the session's user.
    if (!timingSafeEqual(report.user_id_hash, await userRef(c.env.SESSION_HASH_SECRET, session.endUserId))) {
      throw new FaucetError('forbidden', "user_id_hash is not the session's user_ref");
    }
    const { db } = c.var.database();
    const featureKey = report.feature ?? UNSPECIFIED_FEATURE;
    const [pricing] = await queryRows<PricingRow>(
      db,
      sql`select a.developer_share_bps, f.id is not null as feature_found,
                 f.developer_price_per_mtok_usd::numeric(20, 8) as developer_price_per_mtok_usd,
                 f.open_fee_usd::numeric(20, 8) as open_fee_usd
          from apps a left join app_features f on f.app_id = a.id and f.feature_key = ${featureKey}
          where a.id = ${session.appId}::uuid`,
    );
    if (!pricing) throw new FaucetError('unauthorized', 'Session is unknown or expired');
    if (report.feature !== undefined && !pricing.feature_found) throw new FaucetError('not_found', 'Unknown feature');
    const rated = rateUsage(
      {
        routeMode: 'local',
        provider: report.provider,
        model: report.model,
        inputTokens: report.input_tokens,
        outputTokens: report.output_tokens,
        estimated: report.estimated,
      },
      pricing.feature_found
        ? featurePricingFromRow({ developerPricePerMtokUsd: pricing.developer_price_per_mtok_usd, openFeeUsd: pricing.open_fee_usd })
        : {},
      ratingSettingsFor(c.env, pricing.developer_share_bps),
    );
    const booking = await bookUsage(db, {
      requestId: localUsageKey(session.endUserId, report.request_id),
      clientRequestId: report.request_id,
      appId: session.appId,
      endUserId: session.endUserId,
      featureKey,
      rated,
      metadata: { occurred_at: report.occurred_at, source: 'local_usage_report' },
    });
    if (booking.outcome === 'insufficient_balance') {
      throw new FaucetError('insufficient_balance', "The feature's fee exceeds the wallet's available balance");
    }
    return c.json(
      {
        request_id: report.request_id,
        recorded: booking.outcome === 'booked',
        route_mode: 'local' as const,
        charge: {
          currency: 'USD' as const,
          amount_usd: formatUsd(booking.retailUsd),
          upstream_cost_usd: formatUsd(booking.upstreamCostUsd),
        },
      },
      200,
    );
  });
}
