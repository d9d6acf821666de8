import { beforeAll, describe, expect, it } from 'vitest';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { balanceOf, chargeOf, createTestUser, fund, openLedgerDatabase, type LedgerTestDatabase } from '../../../test/ledger-kit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
  return () => database.close();
});

const adjust = (walletId: string, json: Record<string, unknown>) =>
  call(api(), testEnv, `/v1/admin/wallets/${walletId}/adjustments`, { token: adminToken, json });

describe('POST /v1/admin/wallets/{id}/adjustments: chargeback after the money was spent', () => {
  it('books the chargeback below zero as a receivable and claws back the developer revenue of the spent part', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const booked = await bookUsage(database.db, {
      requestId: `spend-${crypto.randomUUID()}`,
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: chargeOf('7.00000000'),
    });
    expect(booked.outcome).toBe('booked');
    const body = { kind: 'chargeback', direction: 'debit', amount_usd: '10.00000000', reason: 'bank chargeback', idempotency_key: 'cb-1' };
    const response = await adjust(user.walletId, body);
    expect(response.status).toBe(201);
    expect(await balanceOf(testEnv, user.walletId)).toBe('-7.00000000');
    const [receivable] = await sql<{ amount: string; kind: string }>(
      testEnv,
      'select amount::text, kind from receivables where wallet_id = $1',
      [user.walletId],
    );
    expect(receivable).toEqual({ amount: '7.00000000', kind: 'chargeback' });
    const clawbacks = await sql<{ spent_usd: string; source_kind: string }>(
      testEnv,
      'select spent_usd::text, source_kind from revenue_clawbacks where user_wallet_id = $1',
      [user.walletId],
    );
    expect(clawbacks).toEqual([{ spent_usd: '7.00000000', source_kind: 'chargeback' }]);
    // The replay books nothing more.
    const replay = await adjust(user.walletId, body);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await balanceOf(testEnv, user.walletId)).toBe('-7.00000000');
    expect(await sql(testEnv, 'select id from revenue_clawbacks where user_wallet_id = $1', [user.walletId])).toHaveLength(1);
    const reconciliation = await reconcileLedger(database.db);
    expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
  });

  it('still refuses a manual refund or adjustment debit beyond the available balance', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    for (const kind of ['refund', 'adjustment']) {
      const response = await adjust(user.walletId, { kind, direction: 'debit', amount_usd: '2.00000000', reason: 'too much' });
      expect(response.status).toBe(402);
    }
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
  });
});
