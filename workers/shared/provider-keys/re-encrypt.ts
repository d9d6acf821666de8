/**
 * Key rotation, step 2 (docs/provider-keys.md): re-encrypt every stored key that is not under the
 * current key version — decrypt with its old version, encrypt with the current one and a fresh IV.
 * Each batch is one statement that also writes one audit row per key, and only replaces a row that
 * still holds the ciphertext it read (a concurrent re-encryption or disable wins, nothing is lost).
 * Rows whose version is not in the keyring, or that fail to decrypt, are counted, not touched.
 */
import { and, asc, gt, ne, sql } from 'drizzle-orm';
import { providerCredentials } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import { queryRows } from '../query.ts';
import { auditInsertSql } from './audit.ts';
import type { Keyring } from './keyring.ts';
import type { AuditActor } from './owner.ts';
import { openKey, sealKey } from './seal.ts';

const stored = providerCredentials;

export interface ReEncryptResult {
  reEncrypted: number;
  /** Rows still under an older version that this keyring could not read (version missing or tampered). */
  unreadable: number;
  /** Rows still under an older version after this run (unreadable ones included). */
  remaining: number;
  currentKeyVersion: number;
}

export async function reEncryptProviderKeys(
  db: Db,
  keyring: Keyring,
  options: { actor: AuditActor; requestId: string; batchSize?: number; maxBatches?: number },
): Promise<ReEncryptResult> {
  const current = keyring.current.version;
  const batchSize = options.batchSize ?? 100;
  let reEncrypted = 0;
  let unreadable = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (let batch = 0; batch < (options.maxBatches ?? 20); batch++) {
    const stale = await db
      .select({ id: stored.id, provider: stored.provider, ciphertext: stored.ciphertext, iv: stored.iv, keyVersion: stored.keyVersion })
      .from(stored)
      .where(and(ne(stored.keyVersion, current), gt(stored.id, after)))
      .orderBy(asc(stored.id))
      .limit(batchSize);
    if (stale.length === 0) break;
    after = stale.at(-1)!.id;
    const replacements = [];
    for (const row of stale) {
      const context = { credentialId: row.id, provider: row.provider };
      try {
        const plaintext = await openKey(keyring, { ciphertext: row.ciphertext, iv: row.iv, keyVersion: row.keyVersion }, context);
        const sealed = await sealKey(keyring, plaintext, context);
        replacements.push({
          id: row.id,
          old_ciphertext: row.ciphertext,
          ciphertext: sealed.ciphertext,
          iv: sealed.iv,
          key_version: sealed.keyVersion,
        });
      } catch {
        unreadable++;
      }
    }
    if (replacements.length === 0) continue;
    const changed = await queryRows<{ id: string }>(
      db,
      sql`with changed as (
            update provider_credentials p set ciphertext = v.ciphertext, iv = v.iv, key_version = v.key_version
              from jsonb_to_recordset(${JSON.stringify(replacements)}::jsonb)
                   as v(id uuid, old_ciphertext text, ciphertext text, iv text, key_version integer)
             where p.id = v.id and p.ciphertext = v.old_ciphertext
            returning p.id, p.provider, p.owner_type),
          audit as (${auditInsertSql(sql`changed`, options.actor, 'provider_key.re_encrypted', options.requestId)})
          select id from changed`,
    );
    reEncrypted += changed.length;
  }
  const [count] = await queryRows<{ remaining: number }>(
    db,
    sql`select count(*)::integer as remaining from provider_credentials where key_version <> ${current}::integer`,
  );
  return { reEncrypted, unreadable, remaining: count?.remaining ?? 0, currentKeyVersion: current };
}
