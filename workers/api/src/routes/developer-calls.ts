/**
 * The request log (docs/request-log.md): `GET /v1/developer/calls`, the calling developer's calls
 * newest first, filtered (app, feature, end user by user_ref or by their own external id, model,
 * provider, route, outcome, error code, surface, time range, request id), a keyset page at a time;
 * and `GET /v1/developer/calls/{id}`, one call in full (timings, attempts, tokens by class, money,
 * masked key, error); and `GET /v1/developer/calls/stats`, calls, errors and latency per local day.
 * Another developer's call answers exactly like one that does not exist. No prompt or completion is
 * ever shown: none is kept.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { apps, endUsers } from '../../../../drizzle/schema.ts';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { callOutcomes, callSurfaces } from '#shared/calls/call-log.ts';
import { callStatsByDay } from '#shared/calls/call-stats.ts';
import { findCall, listCalls, type CallFilters, type CallLogViewRow } from '#shared/calls/list-calls.ts';
import { hashExternalUserId } from '#shared/crypto.ts';
import type { Db } from '#shared/db.ts';
import { findEndUserByRef } from '#shared/developers/find-end-user-by-ref.ts';
import { usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { callAttemptSchema } from '#shared/wire/faucet-object.ts';
import { PageQuery } from './developer-schemas.ts';
import { parseTimeZone, parseUsageRange } from './developer-usage-query.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });
const instant = z.iso.datetime({ offset: true });

const CallsQuery = PageQuery.extend({
  app: z.string().min(1).max(100).optional().openapi({ description: 'Only this app (public_app_id)' }),
  feature: z.string().min(1).max(100).optional(),
  user_ref: z.string().max(64).optional().openapi({ description: "One end user's calls, by the user_ref POST /v1/sessions returned" }),
  external_user_id: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .openapi({ description: "One end user's calls, by your own id for them (hashed here as sessions hash it; needs `app`)" }),
  model: z.string().min(1).max(300).optional().openapi({ description: 'The model asked for or the one that answered' }),
  provider: z.string().min(1).max(50).optional(),
  route: z.enum(['platform', 'developer_key', 'byok']).optional(),
  outcome: z
    .enum([...callOutcomes, 'estimated'])
    .optional()
    .openapi({
      description: 'answered, cut (the client left or the deadline came), upstream_error, refused; estimated: billed on Faucet’s estimate',
    }),
  code: z.string().min(1).max(64).optional().openapi({ description: 'The error code (DESIGN §4)' }),
  surface: z.enum(callSurfaces).optional(),
  from: instant.optional().openapi({ description: 'Calls at or after this instant (ISO 8601)' }),
  to: instant.optional().openapi({ description: 'Calls before this instant (ISO 8601)' }),
  request_id: z.string().min(1).max(200).optional().openapi({ description: "The client's x-request-id" }),
});

const tokens = z
  .object({
    input: z.number().int().openapi({ description: 'All input tokens, cache reads and writes included' }),
    cached_input: z.number().int(),
    cache_write: z.number().int(),
    audio_input: z.number().int(),
    output: z.number().int().openapi({ description: 'All output tokens, reasoning included' }),
    reasoning: z.number().int(),
    audio_output: z.number().int(),
  })
  .openapi('CallTokens');

const money = z
  .object({
    currency: z.literal('USD'),
    retail_usd: usdStringSchema.describe('Charged to the end user'),
    upstream_cost_usd: usdStringSchema.describe('What the provider charges for these tokens'),
    developer_revenue_usd: usdStringSchema.describe('Credited to you'),
    platform_share_usd: usdStringSchema.describe("Faucet's share"),
    receivable_usd: usdStringSchema.describe('The part the wallet could not cover, owed'),
  })
  .openapi('CallMoney');

const CallSummary = z
  .object({
    id: z.string().openapi({ description: "Faucet's call id (x-faucet-call-id)" }),
    request_id: z.string().openapi({ description: "The client's x-request-id" }),
    created_at: z.string(),
    app: z.string().openapi({ description: 'public_app_id' }),
    feature: z.string(),
    user_ref: z.string(),
    surface: z.enum(callSurfaces),
    requested_model: z.string(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    route_mode: z.string().nullable(),
    outcome: z.enum(callOutcomes),
    error_code: z.string().nullable(),
    stream: z.boolean(),
    estimated: z.boolean().nullable().openapi({ description: 'Null: nothing was billed' }),
    input_tokens: z.number().int().nullable(),
    output_tokens: z.number().int().nullable(),
    charge_usd: usdStringSchema.nullable().openapi({ description: 'Retail charged; null: nothing was billed' }),
    total_ms: z.number().int().nullable(),
  })
  .openapi('CallSummary');

const CallDetail = CallSummary.extend({
  error_message: z.string().nullable(),
  timings: z.object({
    authorize_ms: z.number().int().nullable(),
    first_byte_ms: z.number().int().nullable().openapi({ description: 'Streams: until the upstream accepted the call' }),
    total_ms: z.number().int().nullable(),
  }),
  attempts: z.array(callAttemptSchema).nullable().openapi({ description: 'Each model tried (fallback), when there was a choice' }),
  masked_key: z.string().nullable().openapi({ description: 'The key used on the byok and developer_key routes, masked' }),
  tokens: tokens.nullable(),
  money: money.nullable(),
}).openapi('CallDetail');

/** The longest range of the per-day stats, in local days. */
const STATS_MAX_DAYS = 90;

const CallStatsQuery = z.object({
  from: z.string().max(10).openapi({ description: 'First local day, YYYY-MM-DD (inclusive)', example: '2026-11-01' }),
  to: z
    .string()
    .max(10)
    .openapi({ description: `Last local day, YYYY-MM-DD (inclusive); at most ${STATS_MAX_DAYS} days after from` }),
  tz: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: 'IANA time zone the days are counted in (default UTC)', example: 'Europe/Berlin' }),
  app: z.string().min(1).max(100).optional().openapi({ description: 'Only this app (public_app_id)' }),
});

const CallStatsDay = z
  .object({
    day: z.string().openapi({ description: 'Local day in tz, YYYY-MM-DD' }),
    calls: z.number().int(),
    errors: z.number().int().openapi({ description: 'upstream_error + refused + cut' }),
    upstream_errors: z.number().int(),
    refused: z.number().int(),
    cut: z.number().int(),
    p50_ms: z.number().nullable().openapi({ description: 'Median total_ms of the day (percentile_cont); null: no timed call' }),
    p95_ms: z.number().nullable().openapi({ description: '95th percentile of total_ms (percentile_cont); null: no timed call' }),
  })
  .openapi('CallStatsDay');

const stats = createRoute({
  method: 'get',
  path: '/v1/developer/calls/stats',
  summary: 'Your calls per local day: calls, errors, latency p50 and p95 (at most 90 days)',
  middleware: [requireDeveloper()] as const,
  request: { query: CallStatsQuery },
  responses: {
    200: {
      description: 'Every day of the range, zeros included',
      content: json(z.object({ from: z.string(), to: z.string(), tz: z.string(), data: z.array(CallStatsDay) }).openapi('CallStatsPage')),
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const list = createRoute({
  method: 'get',
  path: '/v1/developer/calls',
  summary: 'Your request log: your calls, newest first, filtered (keyset pages)',
  middleware: [requireDeveloper()] as const,
  request: { query: CallsQuery },
  responses: {
    200: {
      description: 'Calls',
      content: json(z.object({ data: z.array(CallSummary), next_cursor: z.string().nullable() }).openapi('CallPage')),
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const detail = createRoute({
  method: 'get',
  path: '/v1/developer/calls/{id}',
  summary: 'One of your calls in full: timings, attempts, tokens by class, money, error',
  middleware: [requireDeveloper()] as const,
  request: { params: z.object({ id: z.uuid().openapi({ description: "Faucet's call id" }) }) },
  responses: { 200: { description: 'The call', content: json(CallDetail) }, ...errorResponses(400, 401, 403, 404, 429) },
});

export function registerDeveloperCallRoutes(app: ServiceApp): void {
  // Before `/calls/{id}`, which would otherwise take `stats` for an id.
  app.openapi(stats, async (c) => {
    const query = c.req.valid('query');
    const range = parseUsageRange(query, STATS_MAX_DAYS);
    const timeZone = parseTimeZone(query.tz);
    const developerId = c.var.developer.developerId;
    const { db } = c.var.database();
    const appId = query.app === undefined ? null : await ownedAppId(db, developerId, query.app);
    const data = await callStatsByDay(db, { developerId, appId, ...range, timeZone });
    return c.json({ ...range, tz: timeZone, data }, 200);
  });

  app.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const developerId = c.var.developer.developerId;
    const { db } = c.var.database();
    const filters: CallFilters = {
      ...(query.feature === undefined ? {} : { feature: query.feature }),
      ...(query.model === undefined ? {} : { model: query.model }),
      ...(query.provider === undefined ? {} : { provider: query.provider }),
      ...(query.route === undefined ? {} : { route: query.route }),
      ...(query.outcome === undefined ? {} : { outcome: query.outcome }),
      ...(query.code === undefined ? {} : { errorCode: query.code }),
      ...(query.surface === undefined ? {} : { surface: query.surface }),
      ...(query.from === undefined ? {} : { from: query.from }),
      ...(query.to === undefined ? {} : { to: query.to }),
      ...(query.request_id === undefined ? {} : { requestId: query.request_id }),
    };
    if (query.app !== undefined) filters.appId = await ownedAppId(db, developerId, query.app);
    if (query.user_ref !== undefined) {
      const found = await findEndUserByRef(db, { secret: c.env.SESSION_HASH_SECRET, developerId, ref: query.user_ref });
      // An unknown user, or another developer's, has no calls here.
      filters.endUserIds = found === undefined ? [] : [found.end_user_id];
    }
    if (query.external_user_id !== undefined) {
      if (filters.appId == null) throw new FaucetError('invalid_request', 'external_user_id needs app: an id is unique within an app');
      if (!c.env.SESSION_HASH_SECRET) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
      const hash = await hashExternalUserId(c.env.SESSION_HASH_SECRET, query.external_user_id);
      const found = await db
        .select({ id: endUsers.id })
        .from(endUsers)
        .where(and(eq(endUsers.appId, filters.appId), eq(endUsers.externalUserHash, hash)));
      const ids = found.map((row) => row.id).filter((id) => filters.endUserIds == null || filters.endUserIds.includes(id));
      filters.endUserIds = ids;
    }
    if (query.from !== undefined && query.to !== undefined && Date.parse(query.from) >= Date.parse(query.to)) {
      throw new FaucetError('invalid_request', 'from must be before to');
    }
    const page = await listCalls(db, { developerId, filters, limit: query.limit ?? 20, cursor: query.cursor });
    const data = await Promise.all(page.rows.map((row) => summaryOf(c.env.SESSION_HASH_SECRET, row)));
    return c.json({ data, next_cursor: page.nextCursor }, 200);
  });

  app.openapi(detail, async (c) => {
    const { id } = c.req.valid('param');
    const row = await findCall(c.var.database().db, { developerId: c.var.developer.developerId, callId: id });
    if (row === undefined) throw new FaucetError('not_found', 'call not found');
    return c.json(await detailOf(c.env.SESSION_HASH_SECRET, row), 200);
  });
}

/** The row id of one of the developer's apps; another developer's app is 404, like one that does not exist. */
async function ownedAppId(db: Db, developerId: string, publicAppId: string): Promise<string> {
  const [owned] = await db
    .select({ id: apps.id })
    .from(apps)
    .where(and(eq(apps.publicAppId, publicAppId), eq(apps.developerId, developerId)));
  if (!owned) throw new FaucetError('not_found', 'app not found');
  return owned.id;
}

async function summaryOf(secret: string | undefined, row: CallLogViewRow): Promise<z.infer<typeof CallSummary>> {
  return {
    id: row.id,
    request_id: row.client_request_id,
    created_at: row.created_at,
    app: row.public_app_id,
    feature: row.feature_key,
    user_ref: await userRef(secret, row.end_user_id),
    surface: row.surface,
    requested_model: row.requested_model,
    provider: row.provider,
    model: row.model,
    route_mode: row.route_mode,
    outcome: row.outcome,
    error_code: row.error_code,
    stream: row.stream,
    estimated: row.estimated,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    charge_usd: row.retail_usd,
    total_ms: row.total_ms,
  };
}

async function detailOf(secret: string | undefined, row: CallLogViewRow): Promise<z.infer<typeof CallDetail>> {
  const billed = row.retail_usd !== null;
  return {
    ...(await summaryOf(secret, row)),
    error_message: row.error_message,
    timings: { authorize_ms: row.authorize_ms, first_byte_ms: row.first_byte_ms, total_ms: row.total_ms },
    attempts: (row.attempts as z.infer<typeof callAttemptSchema>[] | null) ?? null,
    masked_key: row.masked_key,
    tokens: billed
      ? {
          input: row.input_tokens ?? 0,
          cached_input: row.cached_tokens ?? 0,
          cache_write: row.cache_write_tokens ?? 0,
          audio_input: row.audio_input_tokens ?? 0,
          output: row.output_tokens ?? 0,
          reasoning: row.reasoning_tokens ?? 0,
          audio_output: row.audio_output_tokens ?? 0,
        }
      : null,
    money: billed
      ? {
          currency: 'USD',
          retail_usd: row.retail_usd as string,
          upstream_cost_usd: row.upstream_cost_usd ?? '0.00000000',
          developer_revenue_usd: row.developer_revenue_usd ?? '0.00000000',
          platform_share_usd: row.platform_share_usd ?? '0.00000000',
          receivable_usd: row.receivable_usd ?? '0.00000000',
        }
      : null,
  };
}
