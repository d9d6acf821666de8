/**
 * A developer ends sessions of their app's end users (docs/identity.md): all of one user's
 * (`POST /v1/developer/apps/{public_app_id}/users/revoke-sessions`) or one, named by the
 * `session_id` that `POST /v1/sessions` returned (`POST …/sessions/{session_id}/revoke`). A revoked
 * session is refused from the next request on, by the gateway and by /v1/user/*. Audited.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { hashExternalUserId } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { errorResponses } from '#shared/openapi.ts';
import { ownedApp, PublicAppIdParam } from '../identity/app-identity-view.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const RevokeUserBody = z
  .object({
    external_user_id: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  })
  .strict()
  .openapi('RevokeUserSessionsRequest');

const Revoked = z
  .object({ revoked_sessions: z.number().int().openapi({ description: 'Sessions that were live and are now revoked' }) })
  .openapi('RevokedSessions');

const revokeUser = createRoute({
  method: 'post',
  path: '/v1/developer/apps/{public_app_id}/users/revoke-sessions',
  summary: 'Revoke every live session of one end user of the app',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(RevokeUserBody) } },
  responses: { 200: { description: 'Revoked', content: json(Revoked) }, ...errorResponses(400, 401, 404, 413, 429) },
});

const revokeOne = createRoute({
  method: 'post',
  path: '/v1/developer/apps/{public_app_id}/sessions/{session_id}/revoke',
  summary: 'Revoke one session of the app (idempotent)',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam.extend({ session_id: z.uuid() }) },
  responses: { 200: { description: 'Revoked', content: json(Revoked) }, ...errorResponses(400, 401, 404, 429) },
});

/** Revokes the live sessions `where` selects (of app $1), with one audit row per revocation request. */
const revokeSql = (where: string) => `
  with revoked as (
    update virtual_sessions set revoked_at = now()
     where app_id = $1 and ${where} and revoked_at is null and expires_at > now()
    returning id),
  audit as (
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('developer', $2, 'app.sessions_revoked', 'app', $1::text, $3,
            jsonb_build_object('sessions', (select coalesce(jsonb_agg(id), '[]'::jsonb) from revoked))))
  select count(*)::int as revoked from revoked`;

export function registerDeveloperSessionRoutes(app: ServiceApp): void {
  app.openapi(revokeUser, async (c) => {
    const secret = c.env.SESSION_HASH_SECRET;
    if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
    const { pool } = c.var.database();
    const developerId = c.var.developer.developerId;
    const owned = await ownedApp(pool, c.req.valid('param').public_app_id, developerId);
    const userHash = await hashExternalUserId(secret, c.req.valid('json').external_user_id);
    const { rows } = await pool.query(revokeSql('end_user_id = (select id from end_users where app_id = $1 and external_user_hash = $4)'), [
      owned.appId,
      developerId,
      c.var.requestId,
      userHash,
    ]);
    return c.json({ revoked_sessions: rows[0].revoked as number }, 200);
  });

  app.openapi(revokeOne, async (c) => {
    const { pool } = c.var.database();
    const developerId = c.var.developer.developerId;
    const params = c.req.valid('param');
    const owned = await ownedApp(pool, params.public_app_id, developerId);
    const { rows: found } = await pool.query('select 1 from virtual_sessions where id = $1 and app_id = $2', [
      params.session_id,
      owned.appId,
    ]);
    if (!found[0]) throw new FaucetError('not_found', 'Unknown session');
    const { rows } = await pool.query(revokeSql('id = $4'), [owned.appId, developerId, c.var.requestId, params.session_id]);
    return c.json({ revoked_sessions: rows[0].revoked as number }, 200);
  });
}
