/**
 * What the API shows of a stored key: id, provider, label, status, the masked key, timestamps and,
 * for developer keys, the monthly budget and this month's recorded upstream cost. Never the key.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { KeyOwner } from './owner.ts';

export interface ProviderKeyView {
  id: string;
  provider: string;
  label: string | null;
  status: 'active' | 'disabled';
  masked_key: string;
  created_at: string;
  disabled_at: string | null;
}

export interface DeveloperProviderKeyView extends ProviderKeyView {
  monthly_budget_usd: string;
  /** Upstream cost recorded on this key in the current calendar month (UTC). */
  spent_this_month_usd: string;
}

export interface ProviderKeyRow {
  id: string;
  provider: string;
  label: string | null;
  status: 'active' | 'disabled';
  masked_key: string;
  created_at: Date | string;
  disabled_at: Date | string | null;
  monthly_budget_usd: string | null;
  spent_this_month_usd: string;
}

/** The select list producing a `ProviderKeyRow` from the row alias `k`. */
export const viewColumnsSql = sql`k.id, k.provider, k.label, k.status, k.masked_key, k.created_at, k.disabled_at,
  k.monthly_budget_usd::text as monthly_budget_usd,
  (select coalesce(sum(u.upstream_cost_usd), 0)::numeric(20, 8)::text from usage_events u
    where u.provider_credential_id = k.id and u.created_at >= faucet_month_start(now())) as spent_this_month_usd`;

/** Rows of `provider_credentials k` that belong to `owner` (the tenant boundary of every query here). */
export function ownedBySql(owner: KeyOwner): SQL {
  return owner.type === 'end_user'
    ? sql`k.owner_type = 'end_user' and k.end_user_id = ${owner.endUserId}::uuid`
    : sql`k.owner_type = 'developer' and k.developer_id = ${owner.developerId}::uuid`;
}

const iso = (value: Date | string) => new Date(value).toISOString();

export function toView(row: ProviderKeyRow): ProviderKeyView {
  return {
    id: row.id,
    provider: row.provider,
    label: row.label,
    status: row.status,
    masked_key: row.masked_key,
    created_at: iso(row.created_at),
    disabled_at: row.disabled_at === null ? null : iso(row.disabled_at),
  };
}

export function toDeveloperView(row: ProviderKeyRow): DeveloperProviderKeyView {
  return { ...toView(row), monthly_budget_usd: row.monthly_budget_usd ?? '0.00000000', spent_this_month_usd: row.spent_this_month_usd };
}
