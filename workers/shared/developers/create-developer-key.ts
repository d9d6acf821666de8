/**
 * A new key for a developer, with its audit row, in one statement. Several keys live at a time (so
 * rotation needs no downtime), up to 20: the `developer_keys` trigger's cap
 * (migrations/functions/faucet_cap_live_rows.sql) refuses one more as 409 `conflict`, also under a race,
 * with nothing written. The full key is returned once, only its hash is stored.
 */
import { sql } from 'drizzle-orm';
import { sha256Hex } from '../crypto.ts';
import type { SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import type { AuditActor } from '../provider-keys/owner.ts';
import { FaucetError } from '../wire/errors.ts';
import { type DeveloperKeyRow, developerKeyColumns, keyPrefix, newDeveloperKey } from './developer-view.ts';

export interface CreateDeveloperKeyInput {
  developerId: string;
  label: string | null;
  actor: AuditActor;
  requestId: string | null;
  /** Generated when absent (the seed supplies the key it prints). */
  key?: string;
}

export async function createDeveloperKey(db: SqlDatabase, input: CreateDeveloperKeyInput): Promise<{ row: DeveloperKeyRow; key: string }> {
  const key = input.key ?? newDeveloperKey();
  const keyHash = await sha256Hex(key);
  const [row] = await querySelection(
    db,
    developerKeyColumns,
    (columns) => sql`with k as (
          insert into developer_keys (developer_id, key_hash, prefix, label)
          select d.id, ${keyHash}, ${keyPrefix(key)}, ${input.label} from developers d
           where d.id = ${input.developerId}::uuid
          returning *),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select ${input.actor.type}, ${input.actor.id}, 'developer_key.created', 'developer_key', k.id::text, ${input.requestId},
                 jsonb_build_object('developer_id', k.developer_id, 'before', null,
                                    'after', jsonb_build_object('prefix', k.prefix, 'label', k.label))
            from k)
        select ${columns} from k`,
  );
  if (!row) throw new FaucetError('not_found', 'Developer not found');
  return { row, key };
}
