/**
 * `POST /v1/usage/local`: a local model call reported by the desktop bridge, booked at zero upstream
 * cost under the same feature rules as a gateway call (the named feature or the app's default; no
 * archived app or feature, no suspended developer), its booking recording the feature prices it used.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { hashSessionToken, requireSession } from '#shared/auth/require-session.ts';
import { bearerToken } from '#shared/auth/bearer.ts';
import { checkCall } from '#shared/authorize/decide-call.ts';
import { leaseContext, type LeaseContextRefusal } from '#shared/wallet/lease-context.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { timingSafeEqual } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { bookUsage } from '#shared/ledger/index.ts';
import { formatUsd, usdStringSchema } from '#shared/money/index.ts';
import { usageReportSchema } from '#shared/wire/usage-report.ts';
import { errorResponses } from '#shared/openapi.ts';
import { featurePricingMetadata, featurePricingOf, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';

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
 * The feature a report is booked under, by the rules of every gateway call (`checkCall`, the checks
 * `decideCall` starts with, on the facts of `faucet_lease_context`): the one it names or the app's
 * default; the session live, its developer not suspended, the app and the feature not archived, the
 * model among the feature's allowed models. Anything else is refused before anything is written.
 */
async function reportedFeature(db: SqlDatabase, tokenHash: string, report: { feature?: string; provider: string; model: string }) {
  const context = await leaseContext(db, {
    tokenHash,
    featureKey: report.feature,
    provider: report.provider,
    model: report.model,
    routing: null,
  });
  const failed = checkCall(
    {
      outcome: context.outcome,
      sessionExpiresAt: context.outcome === 'leasable' ? context.sessionExpiresAt.getTime() : null,
      ownsWallet: true,
    },
    Date.now(),
  );
  if (failed !== null || context.outcome !== 'leasable') throw refusedReport(failed ?? 'unauthorized', report);
  return context;
}

function refusedReport(refusal: LeaseContextRefusal, report: { feature?: string; provider: string; model: string }): FaucetError {
  switch (refusal) {
    case 'unauthorized':
      return new FaucetError('unauthorized', 'Session is unknown or expired');
    case 'developer_suspended':
      return new FaucetError('forbidden', "This app's developer is suspended");
    case 'app_archived':
      return new FaucetError('forbidden', 'This app is archived: it takes no new usage reports.');
    case 'no_default_feature':
      return new FaucetError('invalid_request', 'This report names no feature and the app has no default feature.');
    case 'unknown_feature':
      return new FaucetError('not_found', `This app has no feature "${report.feature}".`);
    case 'feature_archived':
      return new FaucetError('forbidden', `Feature "${report.feature ?? 'default'}" is archived: it takes no new usage reports.`);
    case 'model_not_allowed':
      return new FaucetError('forbidden', `Model "${report.provider}:${report.model}" is not among this feature's allowed models.`);
    case 'routing_changed':
      // Asked without routing: never answered.
      return new FaucetError('conflict', "The feature's routing changed; send the report again.");
  }
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
    const feature = await reportedFeature(db, (await hashSessionToken(bearerToken(c))) as string, report);
    const featurePricing = featurePricingOf(feature.developerPricePerMtokUsd, feature.openFeeUsd);
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
