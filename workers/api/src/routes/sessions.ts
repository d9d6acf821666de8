import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '../../../shared/app.ts';
import { hashExternalUserId, randomToken, sha256Hex } from '../../../shared/crypto.ts';
import { intSetting } from '../../../shared/env.ts';
import { FaucetError } from '../../../shared/errors.ts';
import { errorResponses } from '../../../shared/openapi.ts';

const CreateSessionBody = z
  .object({
    public_app_id: z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, _ or -'),
    external_user_id: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  })
  .openapi('CreateSessionRequest');

const SessionResponse = z
  .object({
    session_token: z.string().openapi({ description: 'fvs_… bearer token, shown once' }),
    token_type: z.literal('Bearer'),
    expires_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Session');

const route = createRoute({
  method: 'post',
  path: '/v1/sessions',
  summary: 'Create a short-lived end-user session for an app',
  request: { body: { required: true, content: { 'application/json': { schema: CreateSessionBody } } } },
  responses: {
    201: { description: 'Session created', content: { 'application/json': { schema: SessionResponse } } },
    ...errorResponses(400, 404, 413, 429),
  },
});

/** One statement: find the app, upsert the end user and their wallet, store the session's hash. */
const createSessionSql = `
  with app as (select id from apps where public_app_id = $1),
  end_user as (
    insert into end_users (app_id, external_user_hash) select id, $2 from app
    on conflict (app_id, external_user_hash) do update set app_id = excluded.app_id
    returning id, app_id),
  wallet as (
    insert into wallets (kind, end_user_id) select 'user', id from end_user
    on conflict (end_user_id) do nothing returning id)
  insert into virtual_sessions (token_hash, app_id, end_user_id, expires_at)
  select $3, end_user.app_id, end_user.id, now() + make_interval(secs => $4) from end_user
  returning expires_at`;

export function registerSessionRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    const secret = c.env.SESSION_HASH_SECRET;
    if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
    const ttlSeconds = Math.min(Math.max(intSetting(c.env.SESSION_TTL_SECONDS, 900), 1), 86_400);
    const token = randomToken('fvs_');
    const { rows } = await c.var
      .database()
      .pool.query(createSessionSql, [
        body.public_app_id,
        await hashExternalUserId(secret, body.external_user_id),
        await sha256Hex(token),
        ttlSeconds,
      ]);
    const row = rows[0];
    if (!row) throw new FaucetError('not_found', 'Unknown public_app_id');
    return c.json(
      { session_token: token, token_type: 'Bearer' as const, expires_at: new Date(row.expires_at).toISOString() },
      201,
    );
  });
}
