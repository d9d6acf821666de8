/**
 * What the API shows of developers and their keys: column lists read by every statement, so a view
 * never carries a key hash. Row types are the statements' own shapes (docs/architecture.md).
 */
import { sql } from 'drizzle-orm';
import { randomToken } from '../crypto.ts';

export interface DeveloperRow {
  id: string;
  name: string;
  email: string;
  payout_details_ref: string | null;
  suspended_at: string | null;
  created_at: string;
}

export interface DeveloperKeyRow {
  id: string;
  prefix: string;
  label: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** Columns of `developers d` for a `DeveloperRow`. */
export const developerColumnsSql = sql.raw('d.id, d.name, d.email, d.payout_details_ref, d.suspended_at, d.created_at');

/** Columns of `developer_keys k` for a `DeveloperKeyRow`. */
export const developerKeyColumnsSql = sql.raw('k.id, k.prefix, k.label, k.created_at, k.last_used_at, k.revoked_at');

/** A new developer key (DESIGN §2: `fdk_` + random); only its hash is stored. */
export function newDeveloperKey(): string {
  return randomToken('fdk_');
}

/** The part of a key shown in lists, enough to tell keys apart and nothing to guess with. */
export function keyPrefix(key: string): string {
  return key.slice(0, 12);
}

const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());

export function toDeveloperView(row: DeveloperRow) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    payout_details_ref: row.payout_details_ref,
    suspended: row.suspended_at !== null,
    suspended_at: iso(row.suspended_at),
    created_at: iso(row.created_at) as string,
  };
}

export function toDeveloperKeyView(row: DeveloperKeyRow) {
  return {
    id: row.id,
    prefix: row.prefix,
    label: row.label,
    created_at: iso(row.created_at) as string,
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
  };
}
