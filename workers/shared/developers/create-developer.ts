/**
 * Onboard a developer in one statement: the developer, their developer wallet, their first key and
 * the audit row, all or nothing. The API (`POST /v1/admin/developers`) and the demo seed both call
 * this; the seed passes the key it prints, the API lets one be generated. An email already taken is
 * a `conflict` and writes nothing.
 */
import { sql } from 'drizzle-orm';
import { sha256Hex } from '../crypto.ts';
import { alias } from 'drizzle-orm/pg-core';
import { wallets } from '../../../drizzle/schema.ts';
import type { SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { developerColumns, type DeveloperRow, k, keyPrefix, newDeveloperKey } from './developer-view.ts';

export interface CreateDeveloperInput {
  name: string;
  email: string;
  payoutDetailsRef: string | null;
  actor: AuditActor;
  requestId: string | null;
  /** The first key; generated when absent (the seed supplies the key it prints). */
  key?: string;
}

export interface CreatedDeveloper {
  developer: DeveloperRow;
  walletId: string;
  keyId: string;
  /** The first key in full: shown once, never stored. */
  key: string;
}

const created = { ...developerColumns, walletId: alias(wallets, 'w').id, keyId: k.id };

export async function createDeveloper(db: SqlDatabase, input: CreateDeveloperInput): Promise<CreatedDeveloper> {
  const key = input.key ?? newDeveloperKey();
  const keyHash = await sha256Hex(key);
  const [row] = await querySelection(
    db,
    created,
    (columns) => sql`with d as (
          insert into developers (name, email, payout_details_ref)
          values (${input.name}, ${input.email}, ${input.payoutDetailsRef})
          on conflict (email) do nothing returning *),
        w as (insert into wallets (kind, developer_id) select 'developer', id from d returning id),
        k as (
          insert into developer_keys (developer_id, key_hash, prefix, label)
          select id, ${keyHash}, ${keyPrefix(key)}, 'first key' from d returning id, prefix),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'developer.created', 'developer', d.id::text, ${input.requestId},
                 jsonb_build_object(
                   'before', null,
                   'after', jsonb_build_object('name', d.name, 'email', d.email,
                                               'payout_details_ref', d.payout_details_ref, 'suspended', false),
                   'key_id', k.id, 'key_prefix', k.prefix)
            from d, k)
        select ${columns} from d, w, k`,
  );
  if (!row) throw new FaucetError('conflict', 'A developer with this email already exists');
  const { walletId, keyId, ...developer } = row;
  return { developer, walletId, keyId, key };
}
