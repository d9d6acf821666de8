/**
 * Create an app for a developer, with its audit row (`app.created`, `after`), in one statement. The
 * API (`POST /v1/developer/apps`) and the demo seed both call this; only the seed names its
 * `public_app_id` (DESIGN §2), otherwise one is generated. Session policy and allowed origins start
 * at their defaults (`server`, none) and are set through the identity endpoints. The cap on live apps
 * (100 per developer) is the `apps` trigger's (migrations/functions/faucet_cap_live_rows.sql): a
 * creation past it is refused as 409 `conflict`, also under a race, with nothing written.
 */
import { sql } from 'drizzle-orm';
import { randomToken } from '../crypto.ts';
import { queryOne, type SqlDatabase } from '../query.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { type AppLimitsInput, parseAppLimits } from './app-limits.ts';
import { appAuditSql } from './app-view.ts';
import { displayName } from './names.ts';

export interface CreateAppInput {
  developerId: string;
  name: string;
  limits?: AppLimitsInput;
  actor: AuditActor;
  requestId: string | null;
  publicAppId?: string;
}

/** `app_` + 16 random base64url characters without `-` (so it reads as one word). */
const newPublicAppId = () => randomToken('app_', 12).replaceAll('-', '_');

export async function createApp(db: SqlDatabase, input: CreateAppInput): Promise<{ publicAppId: string }> {
  const name = displayName(input.name);
  const limits = parseAppLimits(input.limits);
  const row = await queryOne<{ public_app_id: string | null }>(
    db,
    sql`with a as (
          insert into apps (developer_id, public_app_id, name,
                            limit_spend_per_day_usd, limit_spend_per_month_usd, limit_requests_per_minute)
          values (${input.developerId}::uuid, ${input.publicAppId ?? newPublicAppId()}, ${name},
                  ${limits.spendPerDayUsd ?? null}::numeric, ${limits.spendPerMonthUsd ?? null}::numeric,
                  ${limits.requestsPerMinute ?? null}::integer)
          on conflict (public_app_id) do nothing
          returning *),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'app.created', 'app', a.public_app_id, ${input.requestId},
                 jsonb_build_object('before', null, 'after', ${appAuditSql('a')})
            from a)
        select (select public_app_id from a)`,
  );
  if (row.public_app_id !== null) return { publicAppId: row.public_app_id };
  throw new FaucetError('conflict', 'An app with this public_app_id already exists');
}
