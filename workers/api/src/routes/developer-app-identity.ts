/**
 * How an app's end users get sessions, set by the app's developer only (docs/identity.md):
 * `GET /v1/developer/apps/{public_app_id}/identity`, `PATCH …/session-policy`,
 * `PUT …/allowed-origins`, `POST …/signing-secrets` (HS256 secret for `signed`, shown once,
 * rotated with an overlap window). Every change writes an audit row in the same statement.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { queryRows } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { errorResponses } from '#shared/openapi.ts';
import { checkUpstreamUrl } from '#shared/upstream/address-guard.ts';
import { appIdentityView, AppIdentitySchema, ownedApp, PublicAppIdParam } from '../identity/app-identity-view.ts';
import { type AppIdentity, SessionPolicySchema } from '../identity/session-policy.ts';
import { createSigningSecret } from '../identity/signing-secrets.ts';
import { maxAllowedOrigins, WebOriginSchema } from '../identity/web-origin.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const SessionPolicyBody = z
  .object({
    session_policy: SessionPolicySchema,
    jwks_url: z
      .string()
      .max(2048)
      .nullable()
      .optional()
      .openapi({ description: '`signed` apps: verify user tokens against this JWKS (https, public host); null = use signing secrets' }),
  })
  .strict()
  .openapi('SessionPolicyRequest');

const AllowedOriginsBody = z
  .object({ allowed_origins: z.array(WebOriginSchema).max(maxAllowedOrigins) })
  .strict()
  .openapi('AllowedOriginsRequest');

const SigningSecretBody = z
  .object({
    previous_valid_for_seconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional()
      .openapi({ description: 'How long the secrets this one replaces keep verifying (default 3600)' }),
  })
  .strict()
  .openapi('SigningSecretRequest');

const SigningSecretCreated = z
  .object({
    id: z.string().openapi({ description: 'Also accepted as the `kid` header of user tokens' }),
    signing_secret: z.string().openapi({ description: 'fss_…: the HS256 key is its UTF-8 bytes; shown once' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    previous_retire_at: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('SigningSecretCreated');

const base = '/v1/developer/apps/{public_app_id}';
const getIdentity = createRoute({
  method: 'get',
  path: `${base}/identity`,
  summary: "The app's session policy, JWKS URL, allowed web origins and signing secrets (never their values)",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'Identity settings', content: json(AppIdentitySchema) }, ...errorResponses(401, 403, 404, 429) },
});
const setPolicy = createRoute({
  method: 'patch',
  path: `${base}/session-policy`,
  summary: 'Choose who may mint sessions: server (default), signed or anonymous',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(SessionPolicyBody) } },
  responses: { 200: { description: 'Updated', content: json(AppIdentitySchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const setOrigins = createRoute({
  method: 'put',
  path: `${base}/allowed-origins`,
  summary: 'Replace the web origins that may create sessions and call Faucet from a browser for this app',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(AllowedOriginsBody) } },
  responses: { 200: { description: 'Updated', content: json(AppIdentitySchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const createSecret = createRoute({
  method: 'post',
  path: `${base}/signing-secrets`,
  summary: 'Create the current HS256 signing secret (shown once); the previous ones verify for an overlap window',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: false, content: json(SigningSecretBody) } },
  responses: { 201: { description: 'Created', content: json(SigningSecretCreated) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});

/** An archived app takes no change (docs/developers.md); its settings stay readable. */
function changeable(app: AppIdentity): AppIdentity {
  if (app.archived) throw new FaucetError('invalid_state', 'This app is archived: it takes no changes');
  return app;
}

function checkJwksUrl(url: string): void {
  const verdict = checkUpstreamUrl(url);
  if (!verdict.allowed || verdict.url.protocol !== 'https:') {
    throw new FaucetError('invalid_request', 'jwks_url must be an https URL on a public host');
  }
}

export function registerDeveloperAppIdentityRoutes(app: ServiceApp): void {
  app.openapi(getIdentity, async (c) => {
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    return c.json(await appIdentityView(db, owned), 200);
  });

  app.openapi(setPolicy, async (c) => {
    const body = c.req.valid('json');
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const owned = changeable(await ownedApp(db, c.req.valid('param').public_app_id, developerId));
    if (typeof body.jwks_url === 'string') checkJwksUrl(body.jwks_url);
    const jwksUrl = body.jwks_url === undefined ? owned.jwksUrl : body.jwks_url;
    // `signed` needs something to verify with; the check and the update are one statement.
    const policy = body.session_policy;
    const rows = await queryRows<{ id: string }>(
      db,
      sql`with changed as (
            update apps set session_policy = ${policy}, jwks_url = ${jwksUrl}
             where id = ${owned.appId}::uuid and (${policy} <> 'signed' or ${jwksUrl}::text is not null
                   or exists (select 1 from app_signing_secrets
                               where app_id = ${owned.appId}::uuid and (retires_at is null or retires_at > now())))
            returning id),
          audit as (
            insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
            select 'developer', ${developerId}, 'app.session_policy_changed', 'app', id::text, ${c.var.requestId},
                   jsonb_build_object('from', ${owned.sessionPolicy}::text, 'to', ${policy}::text, 'verifier',
                                      case when ${policy} <> 'signed' then null when ${jwksUrl}::text is null then 'signing_secret' else 'jwks' end)
              from changed)
          select id from changed`,
    );
    if (!rows[0]) {
      throw new FaucetError('invalid_state', '`signed` needs a jwks_url or a signing secret (POST …/signing-secrets) first');
    }
    return c.json(await appIdentityView(db, { ...owned, sessionPolicy: body.session_policy, jwksUrl }), 200);
  });

  app.openapi(setOrigins, async (c) => {
    const origins = [...new Set(c.req.valid('json').allowed_origins)];
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const owned = changeable(await ownedApp(db, c.req.valid('param').public_app_id, developerId));
    const originsJson = JSON.stringify(origins);
    await db.execute(
      sql`with changed as (update apps set allowed_origins = ${originsJson}::jsonb where id = ${owned.appId}::uuid returning id)
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select 'developer', ${developerId}, 'app.allowed_origins_changed', 'app', id::text, ${c.var.requestId},
                 jsonb_build_object('allowed_origins', ${originsJson}::jsonb)
            from changed`,
    );
    return c.json(await appIdentityView(db, { ...owned, allowedOrigins: origins }), 200);
  });

  app.openapi(createSecret, async (c) => {
    const body = c.req.valid('json') ?? {};
    const { db } = c.var.database();
    const developerId = c.var.developer.developerId;
    const owned = changeable(await ownedApp(db, c.req.valid('param').public_app_id, developerId));
    const created = await createSigningSecret(db, c.env, {
      appId: owned.appId,
      developerId,
      overlapSeconds: body.previous_valid_for_seconds ?? 3600,
      requestId: c.var.requestId,
    });
    return c.json(
      { id: created.id, signing_secret: created.secret, created_at: created.createdAt, previous_retire_at: created.previousRetireAt },
      201,
    );
  });
}
