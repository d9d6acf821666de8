/**
 * `POST /v1/sessions`: a short-lived end-user session, minted only for a user the app vouches for
 * (DESIGN §3, docs/identity.md). The public app ID names the app and proves nothing; the proof is
 * the developer's key, a user token the developer signed, or — for `anonymous` apps only — a random
 * device id. A browser origin the app does not list is refused. Nothing is written before the proof
 * holds.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ServiceApp } from '#shared/app.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { sha256Hex } from '#shared/crypto.ts';
import { mintSessionToken, walletName } from '#shared/auth/session-token.ts';
import type { Db } from '#shared/db.ts';
import { intSetting } from '#shared/env.ts';
import { queryOne } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { errorResponses } from '#shared/openapi.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { provenUser, type ProvenUser } from '../identity/session-proof.ts';
import { findAppIdentity } from '../identity/session-policy.ts';
import { verifyingSigningSecrets } from '../identity/signing-secrets.ts';

const CreateSessionBody = z
  .object({
    public_app_id: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, _ or -'),
    external_user_id: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters')
      .optional()
      .openapi({
        description:
          "The app's id of the end user; with the developer's key, or checked against user_token's sub. Must not begin with `anonymous-device:` (reserved for device identities)",
      }),
    user_token: z
      .string()
      .min(1)
      .max(65_536)
      .optional()
      .openapi({ description: '`signed` apps: a JWT the developer signed (sub = user, aud = public_app_id, exp ≤ 10 min)' }),
    device_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{22,128}$/, 'must be 22–128 base64url characters (at least 128 random bits)')
      .optional()
      .openapi({ description: '`anonymous` apps: a random device identity the app keeps' }),
  })
  .openapi('CreateSessionRequest');

const SessionResponse = z
  .object({
    session_token: z.string().openapi({ description: 'fvs_… bearer token, shown once' }),
    token_type: z.literal('Bearer'),
    expires_at: z.string().openapi({ format: 'date-time' }),
    session_id: z.string().openapi({ description: 'Names the session for revocation by the developer; not a credential' }),
    user_ref: z.string().openapi({ description: 'Opaque reference of the end user for local usage reports (user_id_hash)' }),
  })
  .openapi('Session');

const route = createRoute({
  method: 'post',
  path: '/v1/sessions',
  summary: "Create a short-lived end-user session for an app (proof per the app's session policy)",
  request: { body: { required: true, content: { 'application/json': { schema: CreateSessionBody } } } },
  responses: {
    201: { description: 'Session created', content: { 'application/json': { schema: SessionResponse } } },
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

/**
 * Upserts the end user and their wallet: the session's token names the wallet, so it is minted after
 * this. A device still stored under its former hash is moved to its current one (same row, same
 * wallet) instead of getting a new end user; racing first sessions of that device find one row.
 */
function upsertEndUser(db: Db, input: { appId: string; user: ProvenUser }) {
  return queryOne<{ endUserId: string }>(
    db,
    sql`with moved as (
          update end_users set external_user_hash = ${input.user.hash}
           where app_id = ${input.appId}::uuid and external_user_hash = ${input.user.formerHash}::text
             and not exists (select 1 from end_users where app_id = ${input.appId}::uuid and external_user_hash = ${input.user.hash})
          returning id),
        end_user as (
          insert into end_users (app_id, external_user_hash)
          select ${input.appId}::uuid, ${input.user.hash} where not exists (select 1 from moved)
          on conflict (app_id, external_user_hash) do update set app_id = excluded.app_id
          returning id),
        wallet as (
          insert into wallets (kind, end_user_id) select 'user', id from end_user
          on conflict (end_user_id) do nothing)
        select id as "endUserId" from moved union all select id from end_user`,
  );
}

/** Stores the session's hash (never the token) and the name of the end user's wallet object. */
function createSession(db: Db, input: { appId: string; endUserId: string; wallet: string; tokenHash: string; ttlSeconds: number }) {
  return queryOne<{ id: string; expiresAt: string }>(
    db,
    sql`with named as (
          update end_users set wallet_object = ${input.wallet}
           where id = ${input.endUserId}::uuid and wallet_object is distinct from ${input.wallet})
        insert into virtual_sessions (token_hash, app_id, end_user_id, expires_at)
        values (${input.tokenHash}, ${input.appId}::uuid, ${input.endUserId}::uuid, now() + make_interval(secs => ${input.ttlSeconds}::integer))
        returning id, expires_at::text as "expiresAt"`,
  );
}

export function registerSessionRoutes(app: ServiceApp, options: { fetch?: FetchFunction } = {}): void {
  const jwksFetch = options.fetch ?? ((request: Request) => fetch(request));

  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    const secret = c.env.SESSION_HASH_SECRET;
    if (!secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
    const { db } = c.var.database();
    const identity = await findAppIdentity(db, body.public_app_id);
    if (!identity) throw new FaucetError('not_found', 'Unknown public_app_id');
    if (identity.developerSuspended) throw new FaucetError('forbidden', "This app's developer is suspended");
    if (identity.archived) throw new FaucetError('forbidden', 'This app is archived');
    c.set('appOrigins', identity.allowedOrigins);
    const origin = c.req.header('origin');
    if (origin !== undefined && !identity.allowedOrigins.includes(origin)) {
      throw new FaucetError('forbidden', "This origin is not among the app's allowed web origins");
    }
    const user = await provenUser(
      {
        authorization: c.req.header('authorization'),
        externalUserId: body.external_user_id,
        userToken: body.user_token,
        deviceId: body.device_id,
      },
      identity,
      {
        db,
        hashSecret: secret,
        verifier: { secrets: () => verifyingSigningSecrets(db, c.env, identity.appId), fetch: jwksFetch },
      },
    );
    const ttlSeconds = Math.min(Math.max(intSetting(c.env.SESSION_TTL_SECONDS, 900), 1), 86_400);
    const { endUserId } = await upsertEndUser(db, { appId: identity.appId, user });
    // The token names the end user's wallet object (docs/edge.md): the gateway reaches it without the database.
    const wallet = await walletName(secret, endUserId);
    const token = mintSessionToken(wallet);
    const session = await createSession(db, { appId: identity.appId, endUserId, wallet, tokenHash: await sha256Hex(token), ttlSeconds });
    return c.json(
      {
        session_token: token,
        token_type: 'Bearer' as const,
        expires_at: new Date(session.expiresAt).toISOString(),
        session_id: session.id,
        user_ref: await userRef(secret, endUserId),
      },
      201,
    );
  });
}
