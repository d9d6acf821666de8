import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

interface Report {
  ok: boolean;
  counts: { wallets: number; transactions: number; entries: number };
  wallet_mismatches: { wallet_id: string; balance_usd: string; entries_sum_usd: string; difference_usd: string }[];
  unbalanced_transactions: { transaction_id: string; sum_usd: string }[];
  leases: { active: number; leased_usd: string };
}

const reconcile = async (token = adminToken) => call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token });

describe('GET /v1/admin/reconciliation/ledger', () => {
  it('refuses a missing or wrong admin token with 401', async () => {
    expect((await call(api(), testEnv, '/v1/admin/reconciliation/ledger')).status).toBe(401);
    expect((await reconcile('nope-nope-nope-nope')).status).toBe(401);
  });

  it('reports ok for the seeded ledger, with its counts', async () => {
    const response = await reconcile();
    expect(response.status).toBe(200);
    const report = (await response.json()) as Report;
    expect(report.ok).toBe(true);
    expect(report.counts.transactions).toBeGreaterThanOrEqual(1); // the seed's opening balance
    expect(report.counts.entries).toBeGreaterThanOrEqual(2);
    expect(report.wallet_mismatches).toEqual([]);
  });

  it('reports the active leases of wallet objects (count and USD) without changing ok', async () => {
    const before = (await (await reconcile()).json()) as Report;
    expect(before.leases).toEqual({ active: 0, leased_usd: '0.00000000' });
    const session = await createSession(testEnv);
    // A lease as faucet_settle_lease leaves it, and an expired and a released one (not counted).
    await sql(
      testEnv,
      `insert into balance_holds (wallet_id, request_id, amount, status, expires_at) values
         ($1, 'lease:a-' || gen_random_uuid(), 0.25, 'active', now() + interval '1 minute'),
         ($1, 'lease:b-' || gen_random_uuid(), 0.50, 'active', now() - interval '1 second'),
         ($1, 'lease:c-' || gen_random_uuid(), 0, 'released', now() + interval '1 minute'),
         ($1, 'call:' || gen_random_uuid(), 0.10, 'active', now() + interval '1 minute')`,
      [session.walletId],
    );
    const report = (await (await reconcile()).json()) as Report;
    expect(report.leases).toEqual({ active: 1, leased_usd: '0.25000000' });
    expect(report.ok).toBe(true);
    await sql(testEnv, `delete from balance_holds where wallet_id = $1`, [session.walletId]);
  });

  it('reports a wallet whose cached balance disagrees with its entries', async () => {
    const { walletId } = await createSession(testEnv);
    await sql(testEnv, 'update wallets set balance = balance + 0.5 where id = $1', [walletId]);
    try {
      const report = (await (await reconcile()).json()) as Report;
      expect(report.ok).toBe(false);
      expect(report.wallet_mismatches).toContainEqual({
        wallet_id: walletId,
        kind: 'user',
        balance_usd: '0.50000000',
        entries_sum_usd: '0.00000000',
        difference_usd: '0.50000000',
      });
    } finally {
      await sql(testEnv, 'update wallets set balance = balance - 0.5 where id = $1', [walletId]);
    }
  });

  it('reports a transaction whose entries do not sum to zero', async () => {
    const [transaction] = await sql<{ id: string }>(
      testEnv,
      "insert into ledger_transactions (kind, reason) values ('adjustment', 'broken on purpose') returning id",
    );
    const [wallet] = await sql<{ id: string }>(testEnv, "select id from wallets where kind = 'platform_adjustments'");
    await sql(testEnv, 'insert into ledger_entries (transaction_id, wallet_id, amount) values ($1, $2, 0.25)', [
      transaction!.id,
      wallet!.id,
    ]);
    await sql(testEnv, 'update wallets set balance = balance + 0.25 where id = $1', [wallet!.id]);
    const report = (await (await reconcile()).json()) as Report;
    expect(report.ok).toBe(false);
    expect(report.unbalanced_transactions).toContainEqual({ transaction_id: transaction!.id, kind: 'adjustment', sum_usd: '0.25000000' });
  });
});
