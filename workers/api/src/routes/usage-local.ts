/**
 * `POST /v1/usage/local`: a local model call reported by the desktop bridge, booked at zero upstream
 * cost under the same feature rules as a gateway call (the named feature or the app's default; no
 * archived app or feature, no suspended developer), its booking recording the feature prices it used.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { appFeatures, apps, developers } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import type { Db } from '#shared/db.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { timingSafeEqual } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { bookUsage } from '#shared/ledger/index.ts';
import { formatUsd, usdStringSchema } from '#shared/money/index.ts';
import { usageReportSchema } from '#shared/wire/usage-report.ts';
import { errorResponses } from '#shared/openapi.ts';
import { featurePricingFromRow, featurePricingMetadata, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';

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

/**
 * The feature a report is booked under, by the gateway's rules (`faucet_authorize_call`): the one it
 * names or the app's default; the app not archived, its developer not suspended, the feature the
 * app's own and not archived. Anything else is refused before anything is written.
 */
async function reportedFeature(db: Db, appId: string, named: string | undefined) {
  const [row] = await db
    .select({
      appArchivedAt: apps.archivedAt,
      developerSuspendedAt: developers.suspendedAt,
      developerShareBps: apps.developerShareBps,
      featureKey: appFeatures.featureKey,
      featureArchivedAt: appFeatures.archivedAt,
      developerPricePerMtokUsd: appFeatures.developerPricePerMtokUsd,
      openFeeUsd: appFeatures.openFeeUsd,
    })
    .from(apps)
    .innerJoin(developers, eq(developers.id, apps.developerId))
    .leftJoin(
      appFeatures,
      and(eq(appFeatures.appId, apps.id), eq(appFeatures.featureKey, named === undefined ? apps.defaultFeatureKey : named)),
    )
    .where(eq(apps.id, appId));
  if (!row) throw new FaucetError('unauthorized', 'Session is unknown or expired');
  if (row.developerSuspendedAt !== null) throw new FaucetError('forbidden', "This app's developer is suspended");
  if (row.appArchivedAt !== null) throw new FaucetError('forbidden', 'This app is archived: it takes no new usage reports.');
  const { featureKey, featureArchivedAt } = row;
  if (featureKey === null) {
    if (named === undefined) throw new FaucetError('invalid_request', 'This report names no feature and the app has no default feature.');
    throw new FaucetError('not_found', `This app has no feature "${named}".`);
  }
  if (featureArchivedAt !== null) {
    throw new FaucetError('forbidden', `Feature "${featureKey}" is archived: it takes no new usage reports.`);
  }
  return { ...row, featureKey };
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
    const feature = await reportedFeature(db, session.appId, report.feature);
    const featurePricing = featurePricingFromRow(feature);
    const rated = rateUsage(
      {
        routeMode: 'local',
        provider: report.provider,
        model: report.model,
        inputTokens: report.input_tokens,
        outputTokens: report.output_tokens,
        estimated: report.estimated,
      },
      featurePricing,
      ratingSettingsFor(c.env, feature.developerShareBps),
    );
    const booking = await bookUsage(db, {
      requestId: localUsageKey(session.endUserId, report.request_id),
      clientRequestId: report.request_id,
      appId: session.appId,
      endUserId: session.endUserId,
      featureKey: feature.featureKey,
      rated,
      metadata: {
        occurred_at: report.occurred_at,
        source: 'local_usage_report',
        feature_pricing: featurePricingMetadata(feature.featureKey, featurePricing),
      },
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
