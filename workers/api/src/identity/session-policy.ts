/** Who may mint a session for an app's end users (DESIGN §3, docs/identity.md). */
import { z } from '@hono/zod-openapi';

export const sessionPolicies = ['server', 'signed', 'anonymous'] as const;
export type SessionPolicy = (typeof sessionPolicies)[number];
export const SessionPolicySchema = z.enum(sessionPolicies).openapi({
  description:
    '`server`: only the developer backend (fdk_ key); `signed`: a user token the developer signed; `anonymous`: a random device id',
});

/** Everything session creation needs to know about the app, read in one query. */
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

interface AppIdentityRow {
  id: string;
  developer_id: string;
  public_app_id: string;
  session_policy: SessionPolicy;
  jwks_url: string | null;
  allowed_origins: string[];
  developer_suspended: boolean;
  archived: boolean;
}

const appIdentitySql = `select id, developer_id, public_app_id, session_policy, jwks_url, allowed_origins,
       archived_at is not null as archived,
       (select d.suspended_at is not null from developers d where d.id = apps.developer_id) as developer_suspended
  from apps where public_app_id = $1`;

function toAppIdentity(row: AppIdentityRow): AppIdentity {
  return {
    appId: row.id,
    developerId: row.developer_id,
    publicAppId: row.public_app_id,
    sessionPolicy: row.session_policy,
    jwksUrl: row.jwks_url,
    allowedOrigins: row.allowed_origins,
    developerSuspended: row.developer_suspended,
    archived: row.archived,
  };
}

export async function findAppIdentity(
  pool: { query(text: string, params: unknown[]): Promise<{ rows: unknown[] }> },
  publicAppId: string,
): Promise<AppIdentity | undefined> {
  const { rows } = await pool.query(appIdentitySql, [publicAppId]);
  return rows[0] ? toAppIdentity(rows[0] as AppIdentityRow) : undefined;
}
