/**
 * HS256 signing secrets of `signed` apps. HMAC verification needs the secret itself, so it is stored
 * sealed like provider keys (AES-256-GCM under PROVIDER_KEY_ENCRYPTION_KEY, the row's id and app as
 * additional data) and shown to the developer once. A new secret becomes current; the previous ones
 * keep verifying until their `retires_at` (the rotation's overlap window), then never again.
 */
import { randomToken } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { decodeBase64, encodeBase64, keyringFrom, type Keyring } from '#shared/provider-keys/keyring.ts';

type Pool = { query(text: string, params: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> };

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

async function open(keyring: Keyring, row: { id: string; app_id: string; ciphertext: string; iv: string; key_version: number }) {
  const key = keyring.byVersion.get(row.key_version);
  const iv = decodeBase64(row.iv);
  const ciphertext = decodeBase64(row.ciphertext);
  if (key === undefined || iv === null || ciphertext === null) {
    throw new FaucetError('internal_error', 'A stored signing secret cannot be opened');
  }
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv, additionalData: additionalData(row.id, row.app_id) },
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
  pool: Pool,
  env: { PROVIDER_KEY_ENCRYPTION_KEY?: unknown },
  input: { appId: string; developerId: string; overlapSeconds: number; requestId: string },
): Promise<CreatedSigningSecret> {
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  const id = crypto.randomUUID();
  const secret = randomToken('fss_');
  const sealed = await seal(keyring, secret, id, input.appId);
  const { rows } = await pool.query(
    `with retired as (
       update app_signing_secrets set retires_at = now() + make_interval(secs => $6)
        where app_id = $2 and (retires_at is null or retires_at > now() + make_interval(secs => $6))
       returning retires_at),
     created as (
       insert into app_signing_secrets (id, app_id, ciphertext, iv, key_version) values ($1, $2, $3, $4, $5)
       returning id, created_at),
     audit as (
       insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
       select 'developer', $7, 'app.signing_secret_created', 'app', $2::text, $8,
              jsonb_build_object('signing_secret_id', created.id, 'previous_valid_for_seconds', $6::integer)
         from created)
     select created.id, created.created_at, (select max(retires_at) from retired) as previous_retire_at from created`,
    [id, input.appId, sealed.ciphertext, sealed.iv, sealed.keyVersion, input.overlapSeconds, input.developerId, input.requestId],
  );
  const row = rows[0]!;
  return {
    id,
    secret,
    createdAt: new Date(row.created_at as string).toISOString(),
    previousRetireAt: row.previous_retire_at === null ? null : new Date(row.previous_retire_at as string).toISOString(),
  };
}

/** The secrets that verify now: the current one first, then those still in their overlap window. */
export async function verifyingSigningSecrets(
  pool: Pool,
  env: { PROVIDER_KEY_ENCRYPTION_KEY?: unknown },
  appId: string,
): Promise<Array<{ id: string; key: Uint8Array }>> {
  const { rows } = await pool.query(
    `select id, app_id, ciphertext, iv, key_version from app_signing_secrets
      where app_id = $1 and (retires_at is null or retires_at > now())
      order by retires_at desc nulls first, created_at desc limit 5`,
    [appId],
  );
  if (rows.length === 0) return [];
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  return Promise.all(
    rows.map(async (row) => ({
      id: row.id as string,
      key: encoder.encode(await open(keyring, row as { id: string; app_id: string; ciphertext: string; iv: string; key_version: number })),
    })),
  );
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
export async function reEncryptSigningSecrets(pool: Pool, keyring: Keyring): Promise<SigningSecretReEncryption> {
  const current = keyring.current.version;
  const liveStale = `key_version <> $1 and (retires_at is null or retires_at > now())`;
  const { rows } = await pool.query(`select id, app_id, ciphertext, iv, key_version from app_signing_secrets where ${liveStale}`, [
    current,
  ]);
  let reEncrypted = 0;
  let unreadable = 0;
  for (const row of rows as Array<{ id: string; app_id: string; ciphertext: string; iv: string; key_version: number }>) {
    let secret: string;
    try {
      secret = await open(keyring, row);
    } catch {
      unreadable++;
      continue;
    }
    const sealed = await seal(keyring, secret, row.id, row.app_id);
    const updated = await pool.query(
      'update app_signing_secrets set ciphertext = $1, iv = $2, key_version = $3 where id = $4 and ciphertext = $5 returning id',
      [sealed.ciphertext, sealed.iv, sealed.keyVersion, row.id, row.ciphertext],
    );
    reEncrypted += updated.rows.length;
  }
  const { rows: left } = await pool.query(`select count(*)::int as count from app_signing_secrets where ${liveStale}`, [current]);
  return { reEncrypted, unreadable, remaining: (left[0] as { count: number }).count };
}
