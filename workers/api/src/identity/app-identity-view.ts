/** The developer's view of an app's identity settings, and the one query that reads it for its owner. */
import { z } from '@hono/zod-openapi';
import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { appSigningSecrets } from '../../../../drizzle/schema.ts';
import type { Db } from '#shared/db.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { findAppIdentity, SessionPolicySchema, type AppIdentity } from './session-policy.ts';

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
export async function ownedApp(db: Db, publicAppId: string, developerId: string): Promise<AppIdentity> {
  const app = await findAppIdentity(db, publicAppId);
  if (!app || app.developerId !== developerId) throw new FaucetError('not_found', 'Unknown app');
  return app;
}

export async function appIdentityView(db: Db, app: AppIdentity): Promise<z.infer<typeof AppIdentitySchema>> {
  const secrets = await db
    .select({ id: appSigningSecrets.id, createdAt: appSigningSecrets.createdAt, retiresAt: appSigningSecrets.retiresAt })
    .from(appSigningSecrets)
    .where(
      and(eq(appSigningSecrets.appId, app.appId), or(isNull(appSigningSecrets.retiresAt), gt(appSigningSecrets.retiresAt, sql`now()`))),
    )
    .orderBy(desc(appSigningSecrets.createdAt));
  return {
    public_app_id: app.publicAppId,
    session_policy: app.sessionPolicy,
    jwks_url: app.jwksUrl,
    allowed_origins: app.allowedOrigins,
    signing_secrets: secrets.map((secret) => ({
      id: secret.id,
      created_at: secret.createdAt.toISOString(),
      retires_at: secret.retiresAt?.toISOString() ?? null,
    })),
  };
}
