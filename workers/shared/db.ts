/**
 * One database handle per request: a Neon `Pool` (WebSocket, so interactive transactions work) and
 * Drizzle over it. Locally `DATABASE_WS_PROXY` points the same driver at a plain PostgreSQL.
 */
import { neon, neonConfig, Pool } from '@neondatabase/serverless';
import { drizzle as drizzleHttp } from 'drizzle-orm/neon-http';
import { drizzle, type NeonDatabase } from 'drizzle-orm/neon-serverless';
import * as schema from '../../drizzle/schema.ts';
import type { Env } from './env.ts';
import type { SqlDatabase } from './query.ts';
import { FaucetError } from './wire/errors.ts';

export type Db = NeonDatabase<typeof schema>;

export interface Database {
  pool: Pool;
  db: Db;
}

/** How a worker opens its database (injectable: tests and the benchmark count statements). */
export type OpenDatabase = (env: Env) => Database;

/** The request's handle (`c.var.database()`, middleware/database.ts). */
export interface RequestDatabase extends Database {
  /**
   * For work that outlives the response (a stream, a settlement under `waitUntil`): the pool stays
   * open until every retain is released, then ends. Release is idempotent.
   */
  retain(): () => void;
}

/**
 * Points the Neon driver at a local WebSocket proxy (`host:port`). Production leaves it unset and the
 * driver talks to Neon directly. Module-level state of the driver, so every caller sets the same.
 */
export function configureLocalProxy(proxy: string): void {
  neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  // As against Neon: send the password with the startup message (the local server uses `password` auth).
  neonConfig.pipelineConnect = 'password';
  // Neon's HTTP query endpoint, which the same local proxy answers (scripts/lib/ws-proxy.ts).
  neonConfig.fetchEndpoint = () => `http://${proxy}/sql`;
}

/**
 * One statement per HTTP request (Neon's query endpoint, connections kept on Neon's side): no
 * connection to open first, so a statement is one round trip even for a caller that has just
 * started. No interactive transactions; each statement is its own. The wallet objects use it
 * (docs/edge.md): every statement they run is a single one.
 */
export function createHttpDatabase(env: Env): SqlDatabase {
  if (!env.DATABASE_URL) throw new FaucetError('internal_error', 'database is not configured');
  if (env.DATABASE_WS_PROXY) configureLocalProxy(env.DATABASE_WS_PROXY);
  return drizzleHttp({ client: neon(env.DATABASE_URL) });
}

export function createDatabase(env: Env): Database {
  if (!env.DATABASE_URL) throw new FaucetError('internal_error', 'database is not configured');
  if (env.DATABASE_WS_PROXY) configureLocalProxy(env.DATABASE_WS_PROXY);
  const pool = new Pool({ connectionString: env.DATABASE_URL, max: 4 });
  // A dropped connection must surface as a failed query, not crash the isolate.
  pool.on('error', () => {});
  return { pool, db: drizzle({ client: pool, schema }) };
}

export { schema };

/**
 * The same handle with every `db.execute` passed through `observe` (the benchmark and the
 * round-trip tests count and time statements with it).
 */
export function observeStatements(database: Database, observe: <T>(run: () => Promise<T>) => Promise<T>): Database {
  const db = new Proxy(database.db, {
    get(target, key, receiver) {
      if (key !== 'execute') return Reflect.get(target, key, receiver);
      return (...args: Parameters<Db['execute']>) => observe(() => target.execute(...args));
    },
  });
  return { pool: database.pool, db };
}
