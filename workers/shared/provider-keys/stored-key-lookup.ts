/**
 * The gateway's `CredentialLookup` for stored keys (DESIGN §6), folded into its one authorize
 * statement: the user's active BYOK key for the provider, and the developer's active key for the
 * provider with its monthly budget reserved in the same statement — reserved only when the
 * developer key is the route the gateway will take, so no budget is held for a call that goes
 * elsewhere. Past the budget, the developer key is left out and the call falls back to the
 * platform pool, unless the request asked for `developer_key`: then it is refused (402).
 */
import { sql } from 'drizzle-orm';
import type { CandidateCall, CredentialLookup, StoredCredentialCandidate } from '../../gateway/src/routing/credential-lookup.ts';
import type { Env } from '../env.ts';
import { FaucetError } from '../errors.ts';
import { reserveBudgetSql, type ReservationOutcome } from './budget-reservation.ts';
import { keyringFrom } from './keyring.ts';
import { openKey } from './seal.ts';

/** The `sealed` object of a usable candidate (what its row holds), or the reason it may not be used. */
type Sealed = { ciphertext: string; iv: string; key_version: number; provider: string } | { refused: Exclude<ReservationOutcome, 'reserved'> | 'unpriced' };

const sealedColumns = sql`jsonb_build_object('ciphertext', k.ciphertext, 'iv', k.iv, 'key_version', k.key_version, 'provider', k.provider)`;

export const storedKeyLookup: CredentialLookup = {
  candidatesSql(provider: string, call: CandidateCall) {
    const requested = call.requestedRoute;
    const activeByok = sql`exists (select 1 from provider_credentials b where b.owner_type = 'end_user'
      and b.end_user_id = session.end_user_id and b.provider = ${provider} and b.status = 'active')`;
    // The developer key is the route exactly when the request asks for it, or asks for nothing and
    // a BYOK key does not come first (the gateway's own choice, repeated so the budget is reserved only then).
    const developerIsRoute =
      requested === 'developer_key' ? sql`true` : requested === null ? sql`not (feature.route_policy = 'byok_first' and ${activeByok})` : sql`false`;
    const outcome =
      call.costBoundUsd === null
        ? sql`case when ${developerIsRoute} then 'unpriced' end`
        : sql`case when ${developerIsRoute} then ${reserveBudgetSql(sql`k.id`, call.requestId, call.costBoundUsd)} end`;
    return sql`
      select 'byok'::text as kind, k.id as credential_id, ${sealedColumns} as sealed
        from session join provider_credentials k
          on k.owner_type = 'end_user' and k.end_user_id = session.end_user_id and k.provider = ${provider} and k.status = 'active'
       where ${requested}::text is null or ${requested}::text = 'byok'
      union all
      select 'developer_key'::text, d.credential_id,
             case when d.outcome = 'reserved' then d.sealed else jsonb_build_object('refused', d.outcome) end
        from (select k.id as credential_id, ${sealedColumns} as sealed, ${outcome} as outcome
                from session cross join feature join provider_credentials k
                  on k.owner_type = 'developer' and k.developer_id = session.developer_id and k.provider = ${provider} and k.status = 'active'
             ) d
       where d.outcome = 'reserved' or (${requested}::text = 'developer_key' and d.outcome is not null)`;
  },

  async open(candidate: StoredCredentialCandidate, env: Env, reference) {
    const sealed = candidate.sealed as Sealed;
    if ('refused' in sealed) throw refusal(sealed.refused, reference.provider);
    const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
    const apiKey = await openKey(
      keyring,
      { ciphertext: sealed.ciphertext, iv: sealed.iv, keyVersion: sealed.key_version },
      { credentialId: candidate.credentialId, provider: sealed.provider },
    );
    return { apiKey, baseUrl: reference.entry.baseUrl };
  },
};

function refusal(reason: Exclude<ReservationOutcome, 'reserved'> | 'unpriced', provider: string): FaucetError {
  switch (reason) {
    case 'budget_exceeded':
      return new FaucetError('budget_exceeded', `The developer's ${provider} key has reached its monthly budget; route_mode "developer_key" cannot be served until next month or a higher budget.`);
    case 'duplicate':
      return new FaucetError('conflict', 'This request id is already in use by another call; send a new x-request-id.');
    case 'unpriced':
      return new FaucetError('invalid_request', 'This model has no catalog price, so its upstream cost cannot be counted against the developer key\'s budget.');
    case 'inactive':
      return new FaucetError('invalid_request', `route_mode "developer_key" needs an active key of the app's developer for provider "${provider}", and there is none.`);
  }
}
