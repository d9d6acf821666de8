/**
 * A developer ends sessions of their app's end users (docs/identity.md): all of one user's, named by
 * the id their backend knows (`POST /v1/developer/apps/{public_app_id}/users/revoke-sessions`) or by
 * the `user_ref` the end-user list shows (`POST /v1/developer/end-users/{user_ref}/revoke-sessions`),
 * or one session, named by the `session_id` that `POST /v1/sessions` returned
 * (`POST …/sessions/{session_id}/revoke`). A revoked session is refused from the next request on, by
 * the gateway and by /v1/user/*. Audited.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { and, eq, type SQL, sql } from 'drizzle-orm';
import { virtualSessions } from '../../../../drizzle/schema.ts';
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { ServiceApp } from '#shared/app.ts';
import { pushRevocations } from '#shared/wallet/wallet-notices.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import type { Db } from '#shared/db.ts';
import { findEndUserByRef, USER_REF_PATTERN } from '#shared/developers/find-end-user-by-ref.ts';
import { queryOne } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { errorResponses } from '#shared/openapi.ts';
import { ownedApp, PublicAppIdParam } from '../identity/app-identity-view.ts';
import { namedUserHash } from '../identity/end-user-hash.ts';

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

const UserRefParam = z.object({
  user_ref: z
    .string()
    .regex(USER_REF_PATTERN, 'must be 64 lowercase hex characters (a user_ref of GET /v1/developer/end-users)')
    .openapi({ param: { name: 'user_ref', in: 'path' }, description: 'The end user as GET /v1/developer/end-users lists them' }),
});

const revokeByRef = createRoute({
  method: 'post',
  path: '/v1/developer/end-users/{user_ref}/revoke-sessions',
  summary: 'Revoke every live session of one of your end users, named by their user_ref',
  middleware: [requireDeveloper()] as const,
  request: { params: UserRefParam },
  responses: { 200: { description: 'Revoked', content: json(Revoked) }, ...errorResponses(400, 401, 403, 404, 429) },
});

/**
 * Revokes the live sessions of the app that `which` selects, with one audit row per revocation
 * request; answers how many were live.
 */
async function revokeSessions(
  c: Context<AppEnv>,
  db: Db,
  input: { appId: string; developerId: string; requestId: string; which: SQL },
): Promise<number> {
  const { revoked, sessions } = await queryOne<{ revoked: number; sessions: Array<{ endUserId: string; tokenHash: string }> }>(
    db,
    sql`with revoked as (
          update virtual_sessions set revoked_at = now()
           where app_id = ${input.appId}::uuid and ${input.which} and revoked_at is null and expires_at > now()
          returning id, end_user_id, token_hash),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          values ('developer', ${input.developerId}, 'app.sessions_revoked', 'app', ${input.appId}, ${input.requestId},
                  jsonb_build_object('sessions', (select coalesce(jsonb_agg(id), '[]'::jsonb) from revoked))))
        select count(*)::int as revoked,
               coalesce(jsonb_agg(jsonb_build_object('endUserId', end_user_id, 'tokenHash', token_hash)), '[]'::jsonb) as sessions
          from revoked`,
  );
  // The wallet objects that may have these sessions cached refuse them at once.
  await pushRevocations(c.env, sessions, c.var.logger);
  return revoked;
}

export function registerDeveloperSessionRoutes(app: ServiceApp): void {
  app.openapi(revokeUser, async (c) => {
    const secret = c.env.SESSION_HASH_SECRET;
    if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, developerId);
    const userHash = await namedUserHash(secret, c.req.valid('json').external_user_id);
    const revoked = await revokeSessions(c, db, {
      appId: owned.appId,
      developerId,
      requestId: c.var.requestId,
      which: sql`end_user_id = (select id from end_users where app_id = ${owned.appId}::uuid and external_user_hash = ${userHash})`,
    });
    return c.json({ revoked_sessions: revoked }, 200);
  });

  app.openapi(revokeByRef, async (c) => {
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const found = await findEndUserByRef(db, { secret: c.env.SESSION_HASH_SECRET, developerId, ref: c.req.valid('param').user_ref });
    if (!found) throw new FaucetError('not_found', 'Unknown end user');
    const revoked = await revokeSessions(c, db, {
      appId: found.app_id,
      developerId,
      requestId: c.var.requestId,
      which: sql`end_user_id = ${found.end_user_id}::uuid`,
    });
    return c.json({ revoked_sessions: revoked }, 200);
  });

  app.openapi(revokeOne, async (c) => {
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const params = c.req.valid('param');
    const owned = await ownedApp(db, params.public_app_id, developerId);
    const [found] = await db
      .select({ id: virtualSessions.id })
      .from(virtualSessions)
      .where(and(eq(virtualSessions.id, params.session_id), eq(virtualSessions.appId, owned.appId)));
    if (!found) throw new FaucetError('not_found', 'Unknown session');
    const revoked = await revokeSessions(c, db, {
      appId: owned.appId,
      developerId,
      requestId: c.var.requestId,
      which: sql`id = ${params.session_id}::uuid`,
    });
    return c.json({ revoked_sessions: revoked }, 200);
  });
}
