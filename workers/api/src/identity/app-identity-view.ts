/** The developer's view of an app's identity settings, and the one query that reads it for its owner. */
import { z } from '@hono/zod-openapi';
import { FaucetError } from '#shared/wire/errors.ts';
import { findAppIdentity, SessionPolicySchema, type AppIdentity } from './session-policy.ts';

type Pool = { query(text: string, params: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> };

export const PublicAppIdParam = z.object({
  public_app_id: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, _ or -'),
});

export const AppIdentitySchema = z
  .object({
    public_app_id: z.string(),
    session_policy: SessionPolicySchema,
    jwks_url: z.string().nullable(),
    allowed_origins: z.array(z.string()),
    signing_secrets: z.array(
      z.object({
        id: z.string(),
        created_at: z.string().openapi({ format: 'date-time' }),
        retires_at: z.string().nullable().openapi({ description: 'null: the current secret; set: verifies until then' }),
      }),
    ),
  })
  .openapi('AppIdentity');

/** The app if `developerId` owns it; another developer's app is as unknown as a missing one (404). */
export async function ownedApp(pool: Pool, publicAppId: string, developerId: string): Promise<AppIdentity> {
  const app = await findAppIdentity(pool, publicAppId);
  if (!app || app.developerId !== developerId) throw new FaucetError('not_found', 'Unknown app');
  return app;
}

export async function appIdentityView(pool: Pool, app: AppIdentity): Promise<z.infer<typeof AppIdentitySchema>> {
  const { rows } = await pool.query(
    `select id, created_at, retires_at from app_signing_secrets
      where app_id = $1 and (retires_at is null or retires_at > now()) order by created_at desc`,
    [app.appId],
  );
  return {
    public_app_id: app.publicAppId,
    session_policy: app.sessionPolicy,
    jwks_url: app.jwksUrl,
    allowed_origins: app.allowedOrigins,
    signing_secrets: rows.map((row) => ({
      id: row.id as string,
      created_at: new Date(row.created_at as string).toISOString(),
      retires_at: row.retires_at === null ? null : new Date(row.retires_at as string).toISOString(),
    })),
  };
}
