/**
 * The developer an `fdk_` key belongs to, in one statement: the live (unrevoked) key by its SHA-256,
 * its developer and whether they are suspended. The key's `last_used_at` is written only when it is
 * older than a minute, so a busy key costs no write per request.
 */
import { sha256Hex } from '../crypto.ts';

type Queryable = { query(text: string, params: unknown[]): Promise<{ rows: unknown[] }> };

const lookupSql = `
  with key as (
    select k.id, k.developer_id, d.suspended_at is not null as suspended
      from developer_keys k join developers d on d.id = k.developer_id
     where k.key_hash = $1 and k.revoked_at is null),
  touched as (
    update developer_keys set last_used_at = now()
     where id = (select id from key) and (last_used_at is null or last_used_at < now() - interval '1 minute'))
  select developer_id, suspended from key`;

function looksLikeDeveloperKey(token: string): boolean {
  return token.startsWith('fdk_') && token.length <= 200;
}

export async function findDeveloperByKey(pool: Queryable, token: string): Promise<{ developerId: string; suspended: boolean } | undefined> {
  if (!looksLikeDeveloperKey(token)) return undefined;
  const { rows } = await pool.query(lookupSql, [await sha256Hex(token)]);
  const row = rows[0] as { developer_id: string; suspended: boolean } | undefined;
  return row && { developerId: row.developer_id, suspended: row.suspended };
}
