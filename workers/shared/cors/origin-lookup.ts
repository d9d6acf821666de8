/**
 * The database questions CORS asks, cached per isolate for a short while so a browser's calls do
 * not each pay a round trip: is an origin listed by any app (preflights), and which origins does
 * the app of a session token allow (actual requests whose handler did not already say).
 */
import { eq, sql } from 'drizzle-orm';
import { apps, virtualSessions } from '../../../drizzle/schema.ts';
import { createDatabase, type Db } from '../db.ts';
import type { Env } from '../env.ts';

const ttlMs = 30_000;
const maxEntries = 5_000;

interface Cached<T> {
  value: T;
  until: number;
}

function cache<T>() {
  const entries = new Map<string, Cached<T>>();
  return async (key: string, load: () => Promise<T>): Promise<T> => {
    const hit = entries.get(key);
    if (hit && hit.until > Date.now()) return hit.value;
    const value = await load();
    if (entries.size >= maxEntries) entries.clear();
    entries.set(key, { value, until: Date.now() + ttlMs });
    return value;
  };
}

const listedOrigins = cache<boolean>();
const sessionOrigins = cache<readonly string[]>();

/** One read on a database handle of its own (these run from middleware, before any request handle). */
async function read<T>(env: Env, waitUntil: (promise: Promise<unknown>) => void, query: (db: Db) => Promise<T>): Promise<T> {
  const { db, pool } = createDatabase(env);
  try {
    return await query(db);
  } finally {
    waitUntil(pool.end().catch(() => undefined));
  }
}

/** True when some app lists `origin` among its allowed web origins. */
export function isOriginListedByAnyApp(env: Env, waitUntil: (promise: Promise<unknown>) => void, origin: string): Promise<boolean> {
  return listedOrigins(origin, async () => {
    const rows = await read(env, waitUntil, (db) =>
      db.select({ id: apps.id }).from(apps).where(sql`${apps.allowedOrigins} @> jsonb_build_array(${origin}::text)`).limit(1),
    );
    return rows.length > 0;
  });
}

/**
 * The allowed origins of the app a session token belongs to, also when the session expired or was
 * revoked (its 401 must reach the app's page, so the SDK can renew it); none for an unknown token.
 */
export function originsOfSessionToken(
  env: Env,
  waitUntil: (promise: Promise<unknown>) => void,
  tokenHash: string,
): Promise<readonly string[]> {
  return sessionOrigins(tokenHash, async () => {
    const rows = await read(env, waitUntil, (db) =>
      db
        .select({ allowedOrigins: apps.allowedOrigins })
        .from(virtualSessions)
        .innerJoin(apps, eq(apps.id, virtualSessions.appId))
        .where(eq(virtualSessions.tokenHash, tokenHash)),
    );
    return rows[0]?.allowedOrigins ?? [];
  });
}
