/**
 * One database handle per request: a Neon `Pool` (WebSocket, so interactive transactions work) and
 * Drizzle over it. Locally `DATABASE_WS_PROXY` points the same driver at a plain PostgreSQL.
 */
import { neonConfig, Pool } from '@neondatabase/serverless';
import { drizzle, type NeonDatabase } from 'drizzle-orm/neon-serverless';
import * as schema from '../../drizzle/schema.ts';
import type { Env } from './env.ts';
import { FaucetError } from './errors.ts';

export type Db = NeonDatabase<typeof schema>;

export interface Database {
  pool: Pool;
  db: Db;
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
