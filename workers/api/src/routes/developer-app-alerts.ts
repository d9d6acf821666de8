/**
 * An app's alert thresholds (docs/webhooks.md), set by its developer only:
 * `GET|PUT /v1/developer/apps/{public_app_id}/alerts`. An end user whose balance falls below the
 * low-balance threshold sends `end_user.balance_low` (the trigger of wallets reads it). Another
 * developer's app is 404.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { formatUsd, parseWireAmount, usdStringSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { queryRows } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { ownedApp, PublicAppIdParam } from '../identity/app-identity-view.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const AlertsBody = z
  .object({
    low_balance_threshold_usd: usdStringSchema
      .nullable()
      .openapi({ description: 'An end user whose balance falls below it sends end_user.balance_low; null: none' }),
  })
  .strict()
  .openapi('AppAlertsRequest');
const AlertsSchema = z.object({ public_app_id: z.string(), low_balance_threshold_usd: z.string().nullable() }).openapi('AppAlerts');

const path = '/v1/developer/apps/{public_app_id}/alerts';
const getAlertsRoute = createRoute({
  method: 'get',
  path,
  summary: "The app's alert thresholds (webhook events)",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'Alerts', content: json(AlertsSchema) }, ...errorResponses(401, 403, 404, 429) },
});
const putAlertsRoute = createRoute({
  method: 'put',
  path,
  summary: "Set the app's low-balance threshold: an end user falling below it sends end_user.balance_low",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(AlertsBody) } },
  responses: { 200: { description: 'Set', content: json(AlertsSchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});

export function registerDeveloperAppAlertRoutes(app: ServiceApp): void {
  app.openapi(getAlertsRoute, async (c) => {
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    const [row] = await queryRows<{ threshold: string | null }>(
      db,
      sql`select low_balance_threshold_usd::text as threshold from apps where id = ${owned.appId}::uuid`,
    );
    return c.json({ public_app_id: owned.publicAppId, low_balance_threshold_usd: row?.threshold ?? null }, 200);
  });

  app.openapi(putAlertsRoute, async (c) => {
    const body = c.req.valid('json');
    const threshold =
      body.low_balance_threshold_usd === null
        ? null
        : formatUsd(parseWireAmount(body.low_balance_threshold_usd, { field: 'low_balance_threshold_usd', positive: true }));
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    if (owned.archived) throw new FaucetError('invalid_state', 'This app is archived: it takes no changes');
    const [row] = await queryRows<{ threshold: string | null }>(
      db,
      sql`update apps set low_balance_threshold_usd = ${threshold}::numeric where id = ${owned.appId}::uuid
          returning low_balance_threshold_usd::text as threshold`,
    );
    return c.json({ public_app_id: owned.publicAppId, low_balance_threshold_usd: row?.threshold ?? null }, 200);
  });
}
