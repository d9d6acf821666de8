/**
 * A payout run skips a suspended developer: their money stays in their wallet, not reserved for a
 * transfer, until the suspension is lifted; the next run after `unsuspend` pays them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fund, openLedgerDatabase, type LedgerTestDatabase } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 2);
  return () => database.close();
});

const admin = (path: string, json?: unknown) => call(api(), testEnv, path, { method: 'POST', token: adminToken, json });
const runMock = async () => {
  const response = await admin('/v1/admin/payouts/run-mock', { threshold_usd: '1.00000000' });
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: { wallet_id: string; amount_usd: string }[] }).data;
};

describe('POST /v1/admin/payouts/run-mock: suspended developers', () => {
  it('creates no payout for a suspended developer, and pays them in the first run after unsuspend', async () => {
    const [developer] = await sql<{ id: string; wallet_id: string }>(
      testEnv,
      `with d as (insert into developers (name, email) values ('Suspended payee', gen_random_uuid()::text || '@example.test') returning id)
       insert into wallets (kind, developer_id) select 'developer', id from d returning developer_id as id, id as wallet_id`,
    );
    await fund(database, developer!.wallet_id, '25.00000000');
    expect((await admin(`/v1/admin/developers/${developer!.id}/suspend`, {})).status).toBe(200);

    expect((await runMock()).filter((payout) => payout.wallet_id === developer!.wallet_id)).toEqual([]);
    const [held] = await sql<{ holds: number }>(
      testEnv,
      "select count(*)::int as holds from balance_holds where wallet_id = $1 and status = 'active'",
      [developer!.wallet_id],
    );
    expect(held!.holds).toBe(0);

    expect((await admin(`/v1/admin/developers/${developer!.id}/unsuspend`, {})).status).toBe(200);
    expect((await runMock()).filter((payout) => payout.wallet_id === developer!.wallet_id)).toMatchObject([
      { wallet_id: developer!.wallet_id, amount_usd: '25.00000000' },
    ]);
    const ledger = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    expect(((await ledger.json()) as { ok: boolean }).ok).toBe(true);
  });
});
