/** Who may mint a session for an app's end users (DESIGN §3, docs/identity.md). */
import { z } from '@hono/zod-openapi';
import { eq } from 'drizzle-orm';
import { apps, developers } from '../../../../drizzle/schema.ts';
import type { Db } from '#shared/db.ts';

export const sessionPolicies = ['server', 'signed', 'anonymous'] as const;
export type SessionPolicy = (typeof sessionPolicies)[number];
export const SessionPolicySchema = z.enum(sessionPolicies).openapi({
  description:
    '`server`: only the developer backend (fdk_ key); `signed`: a user token the developer signed; `anonymous`: a random device id',
});

/** Everything session creation needs to know about the app. */
export interface AppIdentity {
  appId: string;
  developerId: string;
  publicAppId: string;
  sessionPolicy: SessionPolicy;
  jwksUrl: string | null;
  allowedOrigins: string[];
  /** A suspended developer's apps refuse new sessions (docs/developers.md). */
  developerSuspended: boolean;
  /** An archived app refuses new sessions and every change (docs/developers.md). */
  archived: boolean;
}

/** Everything session creation needs to know about the app, read in one query. */
export async function findAppIdentity(db: Db, publicAppId: string): Promise<AppIdentity | undefined> {
  const [row] = await db
    .select({
      appId: apps.id,
      developerId: apps.developerId,
      publicAppId: apps.publicAppId,
      sessionPolicy: apps.sessionPolicy,
      jwksUrl: apps.jwksUrl,
      allowedOrigins: apps.allowedOrigins,
      archivedAt: apps.archivedAt,
      developerSuspendedAt: developers.suspendedAt,
    })
    .from(apps)
    .innerJoin(developers, eq(developers.id, apps.developerId))
    .where(eq(apps.publicAppId, publicAppId));
  if (!row) return undefined;
  const { archivedAt, developerSuspendedAt, ...identity } = row;
  return {
    ...identity,
    sessionPolicy: SessionPolicySchema.parse(row.sessionPolicy),
    developerSuspended: developerSuspendedAt !== null,
    archived: archivedAt !== null,
  };
}
