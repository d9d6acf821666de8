/**
 * What the API shows of developers and their keys: the columns every statement selects, so a view
 * never carries a key hash. Declared once from drizzle/schema.ts, over the aliases `d` and `k`: reads
 * select them with the query builder, writes from their RETURNING CTE of that name
 * (ledger/query-selection.ts), so both return the same row type.
 */
import { alias } from 'drizzle-orm/pg-core';
import { developerKeys, developers } from '../../../drizzle/schema.ts';
import { randomToken } from '../crypto.ts';
import type { SelectionRow } from '../ledger/query-selection.ts';

/** `developers d`, or a CTE named `d` with its columns. */
export const d = alias(developers, 'd');

/** `developer_keys k`, or a CTE named `k` with its columns. */
export const k = alias(developerKeys, 'k');

export const developerColumns = {
  id: d.id,
  name: d.name,
  email: d.email,
  payoutDetailsRef: d.payoutDetailsRef,
  suspendedAt: d.suspendedAt,
  createdAt: d.createdAt,
};

export const developerKeyColumns = {
  id: k.id,
  prefix: k.prefix,
  label: k.label,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  revokedAt: k.revokedAt,
};

export type DeveloperRow = SelectionRow<typeof developerColumns>;
export type DeveloperKeyRow = SelectionRow<typeof developerKeyColumns>;

/** A new developer key (DESIGN §2: `fdk_` + random); only its hash is stored. */
export function newDeveloperKey(): string {
  return randomToken('fdk_');
}

/** The part of a key shown in lists, enough to tell keys apart and nothing to guess with. */
export function keyPrefix(key: string): string {
  return key.slice(0, 12);
}

export function toDeveloperView(row: DeveloperRow) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    payout_details_ref: row.payoutDetailsRef,
    suspended: row.suspendedAt !== null,
    suspended_at: row.suspendedAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

export function toDeveloperKeyView(row: DeveloperKeyRow) {
  return {
    id: row.id,
    prefix: row.prefix,
    label: row.label,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  };
}
