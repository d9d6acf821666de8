import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './ports.ts';
import { ensureDatabase, startPostgres, withClient } from './postgres.ts';
import { resetLocalData } from './reset-local-data.ts';

const tmp = join(import.meta.dirname, '..', '..', '.faucet', 'tmp');
mkdirSync(tmp, { recursive: true });
const stateDir = mkdtempSync(join(tmp, 'local-data-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

async function startServer() {
  const server = await startPostgres({ dataDir: join(stateDir, 'postgres', 'data'), port: await freePort() });
  await ensureDatabase(server.url('postgres'), 'faucet');
  return server;
}

describe('local data (npm start / npm run db:reset)', () => {
  it('survives a restart of the embedded PostgreSQL, and db:reset wipes it', async () => {
    const first = await startServer();
    await withClient(first.url('faucet'), (client) =>
      client.query(`create table if not exists kept (note text); insert into kept values ('still here')`),
    );
    await first.stop();

    const second = await startServer();
    const rows = await withClient(second.url('faucet'), async (client) => (await client.query('select note from kept')).rows);
    expect(rows).toEqual([{ note: 'still here' }]);
    await second.stop();

    resetLocalData(stateDir);
    const fresh = await startServer();
    const tables = await withClient(
      fresh.url('faucet'),
      async (client) => (await client.query(`select 1 from information_schema.tables where table_name = 'kept'`)).rows,
    );
    expect(tables).toEqual([]);
    await fresh.stop();
  }, 60_000);
});
