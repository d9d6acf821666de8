/**
 * Store a new provider key: format and endpoint checks (and the live check when enabled), encryption under the
 * current key version bound to the new row's id, and the row plus its audit entry in one statement.
 * At most one active key per owner and provider: a second one is a 409 until the first is disabled.
 */
import { sql } from 'drizzle-orm';
import type { Env } from '../env.ts';
import { FaucetError } from '../wire/errors.ts';
import type { SqlDatabase } from '../query.ts';
import { querySelection } from '../ledger/query-selection.ts';
import { formatUsd, type Usd } from '../money/index.ts';
import type { FetchFunction } from '../upstream/outbound-fetch.ts';
import { auditInsertSql } from './audit.ts';
import { keyringFrom } from './keyring.ts';
import { endpointFor } from './endpoint.ts';
import { checkKeyLive, liveCheckEnabled } from './live-check.ts';
import { actorOf, type KeyOwner } from './owner.ts';
import { maskKey, validateKeyFormat, type KeyProvider } from './provider-formats.ts';
import { type ProviderKeyRow, providerKeyColumns } from './provider-key-view.ts';
import { sealKey } from './seal.ts';

export interface CreateProviderKeyInput {
  owner: KeyOwner;
  provider: KeyProvider;
  apiKey: string;
  label: string | null;
  /** azure and custom only (required there): the API root the key is used at (endpoint.ts). */
  baseUrl?: string | undefined;
  /** Developer keys only (required there). */
  monthlyBudgetUsd: Usd | null;
  requestId: string;
}

export interface CreateOptions {
  env: Env;
  /** The live check's fetch (tests intercept it); used only when `PROVIDER_KEY_LIVE_CHECK=true`. */
  fetch: FetchFunction;
}

export async function createProviderKey(db: SqlDatabase, input: CreateProviderKeyInput, options: CreateOptions): Promise<ProviderKeyRow> {
  validateKeyFormat(input.provider, input.apiKey);
  const baseUrl = endpointFor(input.provider, input.baseUrl, options.env);
  if ((input.owner.type === 'developer') !== (input.monthlyBudgetUsd !== null)) {
    throw new FaucetError('invalid_request', 'monthly_budget_usd is required for developer keys and not accepted for user keys');
  }
  if (liveCheckEnabled(options.env)) {
    await checkKeyLive(input.provider, input.apiKey, { fetch: options.fetch, baseUrl: baseUrl ?? undefined, env: options.env });
  }

  const keyring = await keyringFrom(options.env.PROVIDER_KEY_ENCRYPTION_KEY);
  const id = crypto.randomUUID();
  const sealed = await sealKey(keyring, input.apiKey, { credentialId: id, provider: input.provider });
  const owner = input.owner;
  const rows = await querySelection(
    db,
    providerKeyColumns,
    (columns) => sql`with k as (
          insert into provider_credentials (id, owner_type, end_user_id, developer_id, provider, label,
                                            ciphertext, iv, key_version, masked_key, monthly_budget_usd, base_url)
          values (${id}::uuid, ${owner.type}, ${owner.type === 'end_user' ? owner.endUserId : null}::uuid,
                  ${owner.type === 'developer' ? owner.developerId : null}::uuid, ${input.provider}, ${input.label},
                  ${sealed.ciphertext}, ${sealed.iv}, ${sealed.keyVersion}::integer, ${maskKey(input.provider, input.apiKey)},
                  ${input.monthlyBudgetUsd === null ? null : formatUsd(input.monthlyBudgetUsd)}::numeric, ${baseUrl}::text)
          on conflict do nothing
          returning *),
        audit as (${auditInsertSql(sql`k`, actorOf(owner), 'provider_key.created', input.requestId)})
        select ${columns} from k`,
  );
  const row = rows[0];
  if (row === undefined) {
    throw new FaucetError('conflict', `There is already an active ${input.provider} key; disable it before adding another.`);
  }
  return row;
}
