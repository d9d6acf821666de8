/**
 * HS256 signing secrets of `signed` apps. HMAC verification needs the secret itself, so it is stored
 * sealed like provider keys (AES-256-GCM under PROVIDER_KEY_ENCRYPTION_KEY, the row's id and app as
 * additional data) and shown to the developer once. A new secret becomes current; the previous ones
 * keep verifying until their `retires_at` (the rotation's overlap window), then never again.
 */
import { and, desc, eq, gt, isNull, ne, or, sql } from 'drizzle-orm';
import { appSigningSecrets } from '../../../../drizzle/schema.ts';
import { randomToken } from '#shared/crypto.ts';
import type { Db } from '#shared/db.ts';
import { queryOne } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { decodeBase64, encodeBase64, keyringFrom, type Keyring } from '#shared/provider-keys/keyring.ts';

const secrets = appSigningSecrets;
/** A secret verifies while it is current (no `retires_at`) or inside its overlap window. */
const verifying = or(isNull(secrets.retiresAt), gt(secrets.retiresAt, sql`now()`));
/** The columns `open` needs. */
const sealedColumns = {
  id: secrets.id,
  appId: secrets.appId,
  ciphertext: secrets.ciphertext,
  iv: secrets.iv,
  keyVersion: secrets.keyVersion,
};
type SealedSecret = Pick<typeof secrets.$inferSelect, keyof typeof sealedColumns>;

const encoder = new TextEncoder();

function additionalData(secretId: string, appId: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(`faucet.app_signing_secrets:${secretId}:${appId}`);
}

async function seal(keyring: Keyring, secret: string, secretId: string, appId: string) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const encrypted = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: additionalData(secretId, appId) },
    keyring.current.key,
    encoder.encode(secret),
  );
  return { ciphertext: encodeBase64(new Uint8Array(encrypted)), iv: encodeBase64(iv), keyVersion: keyring.current.version };
}

async function open(keyring: Keyring, row: SealedSecret) {
  const key = keyring.byVersion.get(row.keyVersion);
  const iv = decodeBase64(row.iv);
  const ciphertext = decodeBase64(row.ciphertext);
  if (key === undefined || iv === null || ciphertext === null) {
    throw new FaucetError('internal_error', 'A stored signing secret cannot be opened');
  }
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv, additionalData: additionalData(row.id, row.appId) },
      key,
      ciphertext,
    );
    return new TextDecoder().decode(plaintext);
  } catch (error) {
    throw new FaucetError('internal_error', 'A stored signing secret could not be decrypted', { cause: error });
  }
}

export interface CreatedSigningSecret {
  id: string;
  /** `fss_…`, shown once; the HS256 key is its UTF-8 bytes. */
  secret: string;
  createdAt: string;
  /** Until when the secrets it replaces keep verifying (null when there were none). */
  previousRetireAt: string | null;
}

/**
 * One statement: retire the app's current secret at `now + overlapSeconds` (earlier retirements
 * stay as they were) and insert the new current one, with its audit row.
 */
export async function createSigningSecret(
  db: Db,
  env: { PROVIDER_KEY_ENCRYPTION_KEY?: unknown },
  input: { appId: string; developerId: string; overlapSeconds: number; requestId: string },
): Promise<CreatedSigningSecret> {
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  const id = crypto.randomUUID();
  const secret = randomToken('fss_');
  const sealed = await seal(keyring, secret, id, input.appId);
  const overlap = sql`make_interval(secs => ${input.overlapSeconds}::integer)`;
  // A write with its audit row and the latest retirement it set: the statement's own shape, as text.
  const row = await queryOne<{ createdAt: string; previousRetireAt: string | null }>(
    db,
    sql`with retired as (
          update app_signing_secrets set retires_at = now() + ${overlap}
           where app_id = ${input.appId}::uuid and (retires_at is null or retires_at > now() + ${overlap})
          returning retires_at),
        created as (
          insert into app_signing_secrets (id, app_id, ciphertext, iv, key_version)
          values (${id}::uuid, ${input.appId}::uuid, ${sealed.ciphertext}, ${sealed.iv}, ${sealed.keyVersion}::integer)
          returning id, created_at),
        audit as (
          insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
          select 'developer', ${input.developerId}, 'app.signing_secret_created', 'app', ${input.appId}, ${input.requestId},
                 jsonb_build_object('signing_secret_id', created.id, 'previous_valid_for_seconds', ${input.overlapSeconds}::integer)
            from created)
        select created.created_at::text as "createdAt", (select max(retires_at) from retired)::text as "previousRetireAt" from created`,
  );
  return {
    id,
    secret,
    createdAt: new Date(row.createdAt).toISOString(),
    previousRetireAt: row.previousRetireAt === null ? null : new Date(row.previousRetireAt).toISOString(),
  };
}

/** The secrets that verify now: the current one first, then those still in their overlap window. */
export async function verifyingSigningSecrets(
  db: Db,
  env: { PROVIDER_KEY_ENCRYPTION_KEY?: unknown },
  appId: string,
): Promise<Array<{ id: string; key: Uint8Array }>> {
  const rows = await db
    .select(sealedColumns)
    .from(secrets)
    .where(and(eq(secrets.appId, appId), verifying))
    .orderBy(sql`${secrets.retiresAt} desc nulls first`, desc(secrets.createdAt))
    .limit(5);
  if (rows.length === 0) return [];
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  return Promise.all(rows.map(async (row) => ({ id: row.id, key: encoder.encode(await open(keyring, row)) })));
}

export interface SigningSecretReEncryption {
  reEncrypted: number;
  /** Live secrets under an older version this keyring cannot read. */
  unreadable: number;
  /** Live secrets still under an older version after this run. */
  remaining: number;
}

/**
 * Key rotation for signing secrets, as for provider keys: every secret that still verifies (not
 * retired) and is sealed under an older key version is sealed again under the current one. A row is
 * replaced only if it still holds the ciphertext read, so a concurrent rotation loses nothing.
 * Retired secrets never verify again and are left as they are.
 */
export async function reEncryptSigningSecrets(db: Db, keyring: Keyring): Promise<SigningSecretReEncryption> {
  const liveStale = and(ne(secrets.keyVersion, keyring.current.version), verifying);
  const rows = await db.select(sealedColumns).from(secrets).where(liveStale);
  let reEncrypted = 0;
  let unreadable = 0;
  for (const row of rows) {
    let secret: string;
    try {
      secret = await open(keyring, row);
    } catch {
      unreadable++;
      continue;
    }
    const sealed = await seal(keyring, secret, row.id, row.appId);
    const updated = await db
      .update(secrets)
      .set({ ciphertext: sealed.ciphertext, iv: sealed.iv, keyVersion: sealed.keyVersion })
      .where(and(eq(secrets.id, row.id), eq(secrets.ciphertext, row.ciphertext)))
      .returning({ id: secrets.id });
    reEncrypted += updated.length;
  }
  return { reEncrypted, unreadable, remaining: await db.$count(secrets, liveStale) };
}
