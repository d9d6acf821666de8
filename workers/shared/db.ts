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

let configuredProxy: string | undefined;

function configureDriver(env: Env): void {
  const proxy = env.DATABASE_WS_PROXY;
  if (!proxy || proxy === configuredProxy) return;
  neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.pipelineConnect = false;
  configuredProxy = proxy;
}

export function createDatabase(env: Env): Database {
  if (!env.DATABASE_URL) throw new FaucetError('internal_error', 'database is not configured');
  configureDriver(env);
  const pool = new Pool({ connectionString: env.DATABASE_URL, max: 4 });
  // A dropped connection must surface as a failed query, not crash the isolate.
  pool.on('error', () => {});
  return { pool, db: drizzle({ client: pool, schema }) };
}

export { schema };
