/**
 * A developer's webhook endpoints (docs/webhooks.md). The signing secret (`whsec_…`) is shown once,
 * at creation and at each rotation, and stored sealed as provider keys are (the endpoint's id as
 * additional data); a rotation keeps the previous secret signing beside the new one until its overlap
 * ends. An endpoint is never hard-deleted (its deliveries reference it): deleting stops its deliveries.
 */
import { sql } from 'drizzle-orm';
import { randomToken } from '../crypto.ts';
import type { Env } from '../env.ts';
import { type Keyring, keyringFrom } from '../provider-keys/keyring.ts';
import { openKey, type SealContext, type SealedKey, sealKey } from '../provider-keys/seal.ts';
import { queryRows, type SqlDatabase } from '../query.ts';

export interface EndpointRow {
  id: string;
  developer_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  secret_ciphertext: string;
  secret_iv: string;
  secret_key_version: number;
  secret_hint: string;
  previous_secret_ciphertext: string | null;
  previous_secret_iv: string | null;
  previous_secret_key_version: number | null;
  previous_secret_expires_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/** What a secret's ciphertext is bound to: its endpoint's row. */
const sealContext = (endpointId: string): SealContext => ({ credentialId: endpointId, provider: 'webhook_signing_secret' });

const newSecret = () => randomToken('whsec_');
const hintOf = (secret: string) => secret.slice(-4);

async function seal(env: Env, endpointId: string, secret: string): Promise<SealedKey> {
  return sealKey(await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY), secret, sealContext(endpointId));
}

const live = sql`deleted_at is null`;

/**
 * The audit row of a change to the endpoint rows `e` of a data-modifying WITH (docs/developers.md,
 * the audit log): the developer as actor, what the endpoint is after it — never a secret.
 */
const audit = (developerId: string, action: string, requestId: string) =>
  sql`insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
      select 'developer', ${developerId}, ${action}, 'webhook_endpoint', e.id::text, ${requestId},
             jsonb_build_object('developer_id', e.developer_id,
               'after', jsonb_build_object('url', e.url, 'event_types', e.event_types, 'enabled', e.enabled,
                                           'deleted', e.deleted_at is not null, 'secret_hint', e.secret_hint,
                                           'previous_secret_expires_at', e.previous_secret_expires_at))
        from e`;

export async function createEndpoint(
  db: SqlDatabase,
  env: Env,
  input: { developerId: string; url: string; description: string | null; eventTypes: string[]; enabled: boolean; requestId: string },
): Promise<{ endpoint: EndpointRow; secret: string }> {
  const id = crypto.randomUUID();
  const secret = newSecret();
  const sealed = await seal(env, id, secret);
  const [endpoint] = await queryRows<EndpointRow>(
    db,
    sql`with e as (
          insert into webhook_endpoints (id, developer_id, url, description, event_types, enabled,
                                         secret_ciphertext, secret_iv, secret_key_version, secret_hint)
          values (${id}::uuid, ${input.developerId}::uuid, ${input.url}, ${input.description},
                  ${`{${input.eventTypes.join(',')}}`}::text[], ${input.enabled},
                  ${sealed.ciphertext}, ${sealed.iv}, ${sealed.keyVersion}, ${hintOf(secret)})
          returning *),
        audit as (${audit(input.developerId, 'webhook_endpoint.created', input.requestId)})
        select * from e`,
  );
  return { endpoint: endpoint!, secret };
}

export async function listEndpoints(db: SqlDatabase, developerId: string): Promise<EndpointRow[]> {
  return queryRows<EndpointRow>(
    db,
    sql`select * from webhook_endpoints where developer_id = ${developerId}::uuid and ${live} order by created_at, id`,
  );
}

/** The developer's endpoint, or undefined: unknown, deleted, or another developer's. */
export async function findEndpoint(db: SqlDatabase, developerId: string, id: string): Promise<EndpointRow | undefined> {
  const [row] = await queryRows<EndpointRow>(
    db,
    sql`select * from webhook_endpoints where id = ${id}::uuid and developer_id = ${developerId}::uuid and ${live}`,
  );
  return row;
}

export async function updateEndpoint(
  db: SqlDatabase,
  developerId: string,
  id: string,
  patch: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean },
  requestId: string,
): Promise<EndpointRow | undefined> {
  const [row] = await queryRows<EndpointRow>(
    db,
    sql`with e as (
          update webhook_endpoints set
            url = coalesce(${patch.url ?? null}, url),
            description = case when ${patch.description !== undefined} then ${patch.description ?? null} else description end,
            event_types = coalesce(${patch.eventTypes === undefined ? null : `{${patch.eventTypes.join(',')}}`}::text[], event_types),
            enabled = coalesce(${patch.enabled ?? null}::boolean, enabled),
            updated_at = now()
          where id = ${id}::uuid and developer_id = ${developerId}::uuid and ${live}
          returning *),
        audit as (${audit(developerId, 'webhook_endpoint.updated', requestId)})
        select * from e`,
  );
  return row;
}

/** Stops the endpoint's deliveries for good; true when it was the developer's and live. */
export async function deleteEndpoint(db: SqlDatabase, developerId: string, id: string, requestId: string): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`with e as (
          update webhook_endpoints set deleted_at = now(), enabled = false, updated_at = now()
           where id = ${id}::uuid and developer_id = ${developerId}::uuid and ${live} returning *),
        audit as (${audit(developerId, 'webhook_endpoint.deleted', requestId)})
        select id from e`,
  );
  return rows.length > 0;
}

/**
 * A new secret for the endpoint; the current one keeps signing beside it for `overlapSeconds` (0: it
 * stops at once). A previous secret still in its overlap is dropped: two live secrets at most.
 */
export async function rotateSecret(
  db: SqlDatabase,
  env: Env,
  developerId: string,
  id: string,
  overlapSeconds: number,
  requestId: string,
): Promise<{ endpoint: EndpointRow; secret: string } | undefined> {
  const secret = newSecret();
  const sealed = await seal(env, id, secret);
  const [endpoint] = await queryRows<EndpointRow>(
    db,
    sql`with e as (
          update webhook_endpoints set
            previous_secret_ciphertext = case when ${overlapSeconds} > 0 then secret_ciphertext end,
            previous_secret_iv = case when ${overlapSeconds} > 0 then secret_iv end,
            previous_secret_key_version = case when ${overlapSeconds} > 0 then secret_key_version end,
            previous_secret_expires_at = case when ${overlapSeconds} > 0 then now() + make_interval(secs => ${overlapSeconds}) end,
            secret_ciphertext = ${sealed.ciphertext}, secret_iv = ${sealed.iv}, secret_key_version = ${sealed.keyVersion},
            secret_hint = ${hintOf(secret)}, updated_at = now()
          where id = ${id}::uuid and developer_id = ${developerId}::uuid and ${live}
          returning *),
        audit as (${audit(developerId, 'webhook_endpoint.secret_rotated', requestId)})
        select * from e`,
  );
  return endpoint === undefined ? undefined : { endpoint, secret };
}

/** The secrets a delivery signs with now: the current one, and the previous one while its overlap lasts. */
export async function signingSecrets(env: Env, row: EndpointRow, now = new Date()): Promise<string[]> {
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  const context = sealContext(row.id);
  const secrets = [
    await openKey(keyring, { ciphertext: row.secret_ciphertext, iv: row.secret_iv, keyVersion: row.secret_key_version }, context),
  ];
  const expires = row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at);
  if (
    expires !== null &&
    expires > now &&
    row.previous_secret_ciphertext !== null &&
    row.previous_secret_iv !== null &&
    row.previous_secret_key_version !== null
  ) {
    secrets.push(
      await openKey(
        keyring,
        { ciphertext: row.previous_secret_ciphertext, iv: row.previous_secret_iv, keyVersion: row.previous_secret_key_version },
        context,
      ),
    );
  }
  return secrets;
}

export interface SecretReEncryption {
  reEncrypted: number;
  /** Secrets under an older version this keyring cannot read. */
  unreadable: number;
  /** Secrets still under an older version after this run. */
  remaining: number;
}

/**
 * Step 2 of an encryption-key rotation (docs/provider-keys.md) for webhook signing secrets: each
 * live endpoint's current secret, and its previous one while its overlap lasts, sealed again under the
 * keyring's current version (a row changed meanwhile, by a rotation, is left for the next run).
 */
export async function reEncryptWebhookSecrets(db: SqlDatabase, keyring: Keyring): Promise<SecretReEncryption> {
  const version = keyring.current.version;
  const stale = sql`deleted_at is null and (secret_key_version <> ${version}
    or (previous_secret_key_version <> ${version} and previous_secret_expires_at > now()))`;
  const rows = await queryRows<EndpointRow>(db, sql`select * from webhook_endpoints where ${stale} limit 500`);
  let reEncrypted = 0;
  let unreadable = 0;
  for (const row of rows) {
    const context = sealContext(row.id);
    const reseal = async (sealed: SealedKey): Promise<SealedKey> =>
      sealed.keyVersion === version ? sealed : sealKey(keyring, await openKey(keyring, sealed, context), context);
    let current: SealedKey;
    let previous: SealedKey | null = null;
    try {
      current = await reseal({ ciphertext: row.secret_ciphertext, iv: row.secret_iv, keyVersion: row.secret_key_version });
      if (row.previous_secret_ciphertext !== null && row.previous_secret_iv !== null && row.previous_secret_key_version !== null) {
        previous = await reseal({
          ciphertext: row.previous_secret_ciphertext,
          iv: row.previous_secret_iv,
          keyVersion: row.previous_secret_key_version,
        });
      }
    } catch {
      unreadable++;
      continue;
    }
    const updated = await queryRows<{ id: string }>(
      db,
      sql`update webhook_endpoints set secret_ciphertext = ${current.ciphertext}, secret_iv = ${current.iv},
                 secret_key_version = ${current.keyVersion},
                 previous_secret_ciphertext = ${previous?.ciphertext ?? null}, previous_secret_iv = ${previous?.iv ?? null},
                 previous_secret_key_version = ${previous?.keyVersion ?? null},
                 previous_secret_expires_at = case when ${previous !== null} then previous_secret_expires_at end
           where id = ${row.id}::uuid and secret_ciphertext = ${row.secret_ciphertext} returning id`,
    );
    reEncrypted += updated.length;
  }
  const [left] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from webhook_endpoints where ${stale}`);
  return { reEncrypted, unreadable, remaining: left?.n ?? 0 };
}
