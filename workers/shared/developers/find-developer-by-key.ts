/**
 * The developer an `fdk_` key belongs to, in one statement: the live (unrevoked) key by its SHA-256,
 * its developer and whether they are suspended. The key's `last_used_at` is written only when it is
 * older than a minute, so a busy key costs no write per request.
 */
import { sql } from 'drizzle-orm';
import { sha256Hex } from '../crypto.ts';
import { type SqlDatabase, queryRows } from '../query.ts';

function looksLikeDeveloperKey(token: string): boolean {
  return token.startsWith('fdk_') && token.length <= 200;
}

/** What the statement returns: a computed flag beside the id (a write with its read, not a plain read). */
interface FoundDeveloper {
  developerId: string;
  suspended: boolean;
}

export async function findDeveloperByKey(db: SqlDatabase, token: string): Promise<FoundDeveloper | undefined> {
  if (!looksLikeDeveloperKey(token)) return undefined;
  const [found] = await queryRows<FoundDeveloper>(
    db,
    sql`with key as (
          select k.id, k.developer_id, d.suspended_at is not null as suspended
            from developer_keys k join developers d on d.id = k.developer_id
           where k.key_hash = ${await sha256Hex(token)} and k.revoked_at is null),
        touched as (
          update developer_keys set last_used_at = now()
           where id = (select id from key) and (last_used_at is null or last_used_at < now() - interval '1 minute'))
        select developer_id as "developerId", suspended from key`,
  );
  return found;
}
