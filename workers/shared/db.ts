/**
 * One database handle per request: a Neon `Pool` (WebSocket, so interactive transactions work) and
 * Drizzle over it. Locally `DATABASE_WS_PROXY` points the same driver at a plain PostgreSQL.
 */
import {
  type CustomTypesConfig,
  type HTTPQueryOptions,
  neon,
  neonConfig,
  type NeonQueryFunction,
  Pool,
  types,
} from '@neondatabase/serverless';
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
 * The types that Drizzle reads as the server's text (timestamp, timestamptz, date, interval and their
 * arrays, numeric[]): its column mappers parse them. Drizzle's neon-http driver sets these on the Neon
 * driver's process-wide parsers (`types.setTypeParser`, in its constructor), which would change what
 * every other Pool and client in the isolate reads (a Date becoming a string, depending on whether an
 * HTTP handle had been opened before). So the HTTP client gets them with each query instead, and
 * `createHttpDatabase` puts the process-wide ones back.
 */
const DRIZZLE_TEXT_TYPES: readonly number[] = [1184, 1114, 1082, 1186, 1231, 1115, 1185, 1187, 1182];
const asText = (value: string) => value;
const httpClientTypes: CustomTypesConfig = {
  getTypeParser: (id, format) => (DRIZZLE_TEXT_TYPES.includes(id) ? asText : types.getTypeParser(id, format)),
};

/** A Neon HTTP client that passes `httpClientTypes` with every query (the driver reads `types` per query only). */
function httpClient(connectionString: string): NeonQueryFunction<false, false> {
  const client = neon(connectionString);
  const query = client.query;
  client.query = ((text: string, params?: unknown[], options?: HTTPQueryOptions<boolean, boolean>) =>
    query(text, params, { ...options, types: httpClientTypes })) as typeof client.query;
  return client;
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
  const client = httpClient(env.DATABASE_URL);
  const processWide = DRIZZLE_TEXT_TYPES.map((id) => [id, types.getTypeParser(id, 'text')] as const);
  try {
    return drizzleHttp({ client });
  } finally {
    for (const [id, parser] of processWide) types.setTypeParser(id, 'text', parser);
  }
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
