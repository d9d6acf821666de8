/**
 * A developer's apps (docs/developers.md, "Apps and features"): create, list, read, update (name,
 * default feature, per-end-user limits) and archive — never delete. Session policy, allowed origins
 * and signing secrets are set through the identity endpoints (developer-app-identity.ts); an app's
 * view shows the first two. Every change is audited; another developer's app is a 404.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { maxRequestsPerMinute } from '#shared/apps/app-limits.ts';
import { type AppRecord, getOwnedApp, toAppView } from '#shared/apps/app-view.ts';
import { archiveApp } from '#shared/apps/archive-app.ts';
import { createApp } from '#shared/apps/create-app.ts';
import { listApps } from '#shared/apps/list-apps.ts';
import { FEATURE_KEY_PATTERN, maxNameLength } from '#shared/apps/names.ts';
import { updateApp } from '#shared/apps/update-app.ts';
import { recallAppLeases } from '#shared/wallet/recall-lease.ts';
import { pushAppChange } from '#shared/wallet/wallet-notices.ts';
import { wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { PublicAppIdParam } from '../identity/app-identity-view.ts';
import { SessionPolicySchema } from '../identity/session-policy.ts';
import { PageQuery } from './developer-schemas.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const spendLimit = wireAmountSchema.nullable().optional();
const LimitsBody = z
  .object({
    spend_per_day_usd: spendLimit,
    spend_per_month_usd: spendLimit,
    requests_per_minute: z.number().int().min(1).max(maxRequestsPerMinute).nullable().optional(),
  })
  .strict()
  .openapi('AppLimitsRequest', {
    description: 'Per end user. USD as "10.00000000" (> 0); null clears a limit; a field left out keeps its value',
  });

const CreateAppBody = z
  .object({ name: z.string().trim().min(1).max(maxNameLength), limits: LimitsBody.optional() })
  .strict()
  .openapi('CreateAppRequest');

const UpdateAppBody = z
  .object({
    name: z.string().trim().min(1).max(maxNameLength).optional(),
    default_feature_key: z
      .string()
      .regex(FEATURE_KEY_PATTERN)
      .optional()
      .openapi({ description: 'A live feature of this app: what a call without `feature` uses' }),
    limits: LimitsBody.optional(),
  })
  .strict()
  .openapi('UpdateAppRequest');

const AppSchema = z
  .object({
    public_app_id: z.string(),
    name: z.string(),
    default_feature_key: z.string().nullable(),
    limits: z.object({
      spend_per_day_usd: z.string().nullable(),
      spend_per_month_usd: z.string().nullable(),
      requests_per_minute: z.number().int().nullable(),
    }),
    session_policy: SessionPolicySchema,
    allowed_origins: z.array(z.string()),
    created_at: z.string().openapi({ format: 'date-time' }),
    archived_at: z.string().nullable().openapi({ description: 'Set: refuses sessions, calls and changes' }),
  })
  .openapi('App');

/** The wire view; the table's check constraint admits only the three policies. */
const appJson = (app: AppRecord) => ({ ...toAppView(app), session_policy: SessionPolicySchema.parse(app.sessionPolicy) });

const AppPageQuery = PageQuery.extend({
  cursor: PublicAppIdParam.shape.public_app_id.optional().openapi({ description: 'next_cursor of the previous page' }),
});

const base = '/v1/developer/apps';
const create = createRoute({
  method: 'post',
  path: base,
  summary: 'Create an app (a public_app_id is generated)',
  middleware: [requireDeveloper()] as const,
  request: { body: { required: true, content: json(CreateAppBody) } },
  responses: { 201: { description: 'Created', content: json(AppSchema) }, ...errorResponses(400, 401, 403, 409, 413, 429) },
});
const list = createRoute({
  method: 'get',
  path: base,
  summary: 'Your apps, newest first (live and archived)',
  middleware: [requireDeveloper()] as const,
  request: { query: AppPageQuery },
  responses: {
    200: { description: 'Apps', content: json(z.object({ data: z.array(AppSchema), next_cursor: z.string().nullable() })) },
    ...errorResponses(400, 401, 403, 429),
  },
});
const read = createRoute({
  method: 'get',
  path: `${base}/{public_app_id}`,
  summary: 'One of your apps',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'The app', content: json(AppSchema) }, ...errorResponses(400, 401, 403, 404, 429) },
});
const update = createRoute({
  method: 'patch',
  path: `${base}/{public_app_id}`,
  summary: 'Change the name, default feature or per-end-user limits (not of an archived app)',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(UpdateAppBody) } },
  responses: { 200: { description: 'Updated', content: json(AppSchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const archive = createRoute({
  method: 'post',
  path: `${base}/{public_app_id}/archive`,
  summary: 'Archive an app (idempotent; never deleted): it refuses new sessions, calls and changes',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'Archived', content: json(AppSchema) }, ...errorResponses(400, 401, 403, 404, 429) },
});

export function registerDeveloperAppRoutes(app: ServiceApp): void {
  app.openapi(create, async (c) => {
    const developerId = c.var.developer.developerId;
    const body = c.req.valid('json');
    const { db } = c.var.database();
    const created = await createApp(db, {
      developerId,
      name: body.name,
      limits: body.limits,
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    return c.json(appJson(await getOwnedApp(db, developerId, created.publicAppId)), 201);
  });

  app.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const page = await listApps(c.var.database().db, c.var.developer.developerId, { limit: query.limit ?? 20, cursor: query.cursor });
    return c.json({ data: page.rows.map(appJson), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(read, async (c) => {
    const app = await getOwnedApp(c.var.database().db, c.var.developer.developerId, c.req.valid('param').public_app_id);
    return c.json(appJson(app), 200);
  });

  app.openapi(update, async (c) => {
    const developerId = c.var.developer.developerId;
    const publicAppId = c.req.valid('param').public_app_id;
    const body = c.req.valid('json');
    const { db } = c.var.database();
    await updateApp(db, {
      developerId,
      publicAppId,
      name: body.name,
      defaultFeatureKey: body.default_feature_key,
      limits: body.limits,
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    const updated = await getOwnedApp(db, developerId, publicAppId);
    // The new limits hold for the next call of every end user: their wallet objects give back leases
    // granted under the old ones (docs/edge.md).
    if (body.limits !== undefined) await recallAppLeases(c.env, db, updated.id, c.var.logger);
    // A new default feature changes what a call naming none is served with: read at the next call.
    if (body.default_feature_key !== undefined) await pushAppChange(c.env, db, { publicAppId }, c.var.logger);
    return c.json(appJson(updated), 200);
  });

  app.openapi(archive, async (c) => {
    const developerId = c.var.developer.developerId;
    const publicAppId = c.req.valid('param').public_app_id;
    const { db } = c.var.database();
    await archiveApp(db, { developerId, publicAppId, actor: { type: 'developer', id: developerId }, requestId: c.var.requestId });
    await pushAppChange(c.env, db, { publicAppId }, c.var.logger);
    return c.json(appJson(await getOwnedApp(db, developerId, publicAppId)), 200);
  });
}
