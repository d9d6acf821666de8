/**
 * What the API shows of a stored key: id, provider, label, status, the masked key, timestamps and,
 * for developer keys, the monthly budget and this month's recorded upstream cost. Never the key.
 * The columns are declared once, from drizzle/schema.ts, over the alias `k`: the list reads them
 * with the query builder, the writes select them from their RETURNING CTE named `k`
 * (ledger/query-selection.ts), so both return a `ProviderKeyRow`.
 */
import type { z } from '@hono/zod-openapi';
import { eq, gte, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { providerCredentials, usageEvents } from '../../../drizzle/schema.ts';
import type { SelectionRow } from '../ledger/query-selection.ts';
import type { KeyOwner } from './owner.ts';
import type { DeveloperProviderKeySchema, ProviderKeySchema } from './wire-schemas.ts';

export type ProviderKeyView = z.infer<typeof ProviderKeySchema>;
export type DeveloperProviderKeyView = z.infer<typeof DeveloperProviderKeySchema>;

/** `provider_credentials k`, or a CTE named `k` with its columns (what a write returns). */
export const k = alias(providerCredentials, 'k');

/** Upstream cost recorded on `k` since the start of the current calendar month (UTC), 8 decimals. */
const spentThisMonthUsd = sql<string>`(select coalesce(sum(${usageEvents.upstreamCostUsd}), 0)::numeric(20, 8)::text
  from ${usageEvents}
  where ${eq(usageEvents.providerCredentialId, k.id)} and ${gte(usageEvents.createdAt, sql`faucet_month_start(now())`)})`;

export const providerKeyColumns = {
  id: k.id,
  provider: k.provider,
  label: k.label,
  status: k.status,
  maskedKey: k.maskedKey,
  baseUrl: k.baseUrl,
  createdAt: k.createdAt,
  disabledAt: k.disabledAt,
  monthlyBudgetUsd: k.monthlyBudgetUsd,
  spentThisMonthUsd,
};

export type ProviderKeyRow = SelectionRow<typeof providerKeyColumns>;

/** Rows of `k` that belong to `owner` (the tenant boundary of every statement here). */
export function ownedBy(owner: KeyOwner): SQL {
  return owner.type === 'end_user'
    ? sql`${eq(k.ownerType, 'end_user')} and ${eq(k.endUserId, owner.endUserId)}`
    : sql`${eq(k.ownerType, 'developer')} and ${eq(k.developerId, owner.developerId)}`;
}

export function toView(row: ProviderKeyRow): ProviderKeyView {
  return {
    id: row.id,
    provider: row.provider,
    label: row.label,
    status: row.status,
    masked_key: row.maskedKey,
    base_url: row.baseUrl,
    created_at: row.createdAt.toISOString(),
    disabled_at: row.disabledAt?.toISOString() ?? null,
  };
}

export function toDeveloperView(row: ProviderKeyRow): DeveloperProviderKeyView {
  return { ...toView(row), monthly_budget_usd: row.monthlyBudgetUsd ?? '0.00000000', spent_this_month_usd: row.spentThisMonthUsd };
}
