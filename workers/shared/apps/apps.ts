/**
 * Apps of a developer (docs/developers.md): create (a generated `public_app_id`), read, update
 * (name, default feature, per-end-user limits) and archive — never delete, ledger rows reference
 * them. Every change writes its audit row (who, what, before/after, request id) in the same
 * statement. Another developer's app is as unknown as a missing one.
 */
import { randomToken } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';
import type { AuditActor, Queryable } from './queryable.ts';

export interface AppLimits {
  /** USD, 8-digit decimal strings; null = no limit. */
  spend_per_day_usd: string | null;
  spend_per_month_usd: string | null;
  requests_per_minute: number | null;
}

export interface AppView {
  public_app_id: string;
  name: string;
  default_feature_key: string | null;
  limits: AppLimits;
  session_policy: string;
  allowed_origins: string[];
  created_at: string;
  archived_at: string | null;
}

const appColumns = `a.id, a.public_app_id, a.name, a.default_feature_key, a.limit_spend_per_day_usd::text as spend_day,
  a.limit_spend_per_month_usd::text as spend_month, a.limit_requests_per_minute as rpm, a.session_policy, a.allowed_origins,
  a.created_at, a.archived_at`;

const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());

function appView(row: Record<string, unknown>): AppView {
  return {
    public_app_id: row.public_app_id as string,
    name: row.name as string,
    default_feature_key: row.default_feature_key as string | null,
    limits: {
      spend_per_day_usd: row.spend_day as string | null,
      spend_per_month_usd: row.spend_month as string | null,
      requests_per_minute: row.rpm as number | null,
    },
    session_policy: row.session_policy as string,
    allowed_origins: row.allowed_origins as string[],
    created_at: iso(row.created_at) as string,
    archived_at: iso(row.archived_at),
  };
}

/** The app's internal id and view, if `developerId` owns it; else 404. */
export async function findOwnedApp(db: Queryable, developerId: string, publicAppId: string): Promise<{ id: string; view: AppView }> {
  const { rows } = await db.query(`select ${appColumns} from apps a where a.public_app_id = $1 and a.developer_id = $2`, [
    publicAppId,
    developerId,
  ]);
  const row = rows[0];
  if (!row) throw new FaucetError('not_found', 'Unknown app');
  return { id: row.id as string, view: appView(row) };
}

export interface CreateAppInput {
  name: string;
  limits?: Partial<AppLimits>;
  /** Only the demo seed names its app's id (DESIGN §2); otherwise it is generated. */
  publicAppId?: string;
}

export async function createApp(db: Queryable, developerId: string, actor: AuditActor, input: CreateAppInput): Promise<AppView> {
  const publicAppId = input.publicAppId ?? randomToken('app_', 12).replace(/[^A-Za-z0-9_]/g, '');
  const limits = input.limits ?? {};
  const { rows } = await db.query(
    `with a as (
       insert into apps (developer_id, public_app_id, name, limit_spend_per_day_usd, limit_spend_per_month_usd, limit_requests_per_minute)
       values ($1, $2, $3, $4::numeric, $5::numeric, $6::integer) returning *),
     audit as (
       insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
       select $7, $8, 'app.created', 'app', a.public_app_id, $9, jsonb_build_object('after', to_jsonb(a) - 'developer_id' - 'id') from a)
     select ${appColumns} from a`,
    [
      developerId,
      publicAppId,
      input.name,
      limits.spend_per_day_usd ?? null,
      limits.spend_per_month_usd ?? null,
      limits.requests_per_minute ?? null,
      actor.type,
      actor.id,
      actor.requestId,
    ],
  );
  return appView(rows[0] as Record<string, unknown>);
}
