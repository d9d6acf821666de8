/**
 * Global setup of the Workers-runtime tests: one embedded PostgreSQL and one WebSocket proxy for the
 * run, and a migrated, seeded template database that each test file clones into its own database
 * (`workers/test/harness.ts`), so files run in parallel without seeing each other's rows.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../scripts/lib/migrate.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { ensureDatabase, startPostgres, withClient } from '../../scripts/lib/postgres.ts';
import { seed } from '../../scripts/lib/seed.ts';
import { startWsProxy } from '../../scripts/lib/ws-proxy.ts';
import { templateDatabase, testSecrets } from './test-secrets.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseAdminUrl: string;
    databaseUrlPrefix: string;
    wsProxyAddress: string;
  }
}

export default async function setup(project: TestProject) {
  const tmp = join(import.meta.dirname, '..', '..', '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'workers-'));
  const postgres = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
  await ensureDatabase(postgres.url('postgres'), templateDatabase);
  await withClient(postgres.url(templateDatabase), async (client) => {
    await migrate(client);
    await seed(client, {
      developerKey: testSecrets.DEMO_DEVELOPER_KEY,
      sessionHashSecret: testSecrets.SESSION_HASH_SECRET,
    });
  });
  const proxy = await startWsProxy();
  project.provide('databaseAdminUrl', postgres.url('postgres'));
  project.provide('databaseUrlPrefix', postgres.url(''));
  project.provide('wsProxyAddress', `127.0.0.1:${proxy.port}`);

  return async () => {
    await proxy.close();
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
