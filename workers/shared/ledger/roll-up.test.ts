import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, demoFixture, sql, type TestEnv } from '../../test/harness.ts';
import { addUsd, formatUsd, parseDatabaseAmount, parseWireAmount } from '../money/index.ts';
import { adjustWallet } from './adjust-wallet.ts';
import { bookUsage } from './book-usage.ts';
import {
  balanceOf,
  createTestUser,
  fund,
  ledgerViolations,
  openLedgerDatabase,
  platformCall,
  type LedgerTestDatabase,
} from '../../test/ledger-kit.ts';
import { rollUpBalances } from './roll-up.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
});
afterAll(async () => {
  await database.close();
});

async function cachedAndPending(walletId: string) {
  const [row] = await sql<{ cached: string; pending: string }>(
    testEnv,
    'select balance::text as cached, faucet_pending(id)::text as pending from wallets where id = $1',
    [walletId],
  );
  return row!;
}

describe('hot accounts', () => {
  it('receive usage credits as appended deltas, counted in their balance, without locking their rows', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    await rollUpBalances(database.db);
    const before = await balanceOf(testEnv, developerWalletId);
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await bookUsage(database.db, {
      requestId: 'hot-1',
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: platformCall(1_000, 500),
    });
    expect(await cachedAndPending(developerWalletId)).toEqual({ cached: before, pending: '0.00020000' });
    expect(await balanceOf(testEnv, developerWalletId)).toBe(formatUsd(addUsd(parseDatabaseAmount(before), parseWireAmount('0.00020000'))));
  });

  it('roll-up folds the pending credits into the balance rows and keeps every balance', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    const balance = await balanceOf(testEnv, developerWalletId);
    expect(await rollUpBalances(database.db)).toBeGreaterThanOrEqual(1);
    expect(await cachedAndPending(developerWalletId)).toEqual({ cached: balance, pending: '0.00000000' });
    const [deltas] = await sql<{ count: number }>(testEnv, 'select count(*)::int as count from wallet_balance_deltas');
    expect(deltas!.count).toBe(0);
    expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  });

  it('lets a debit spend credits that are still pending: the debit folds them in first', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    await rollUpBalances(database.db);
    const start = await balanceOf(testEnv, developerWalletId);
    if (start !== '0.00000000') {
      await adjustWallet(database.db, {
        walletId: developerWalletId,
        kind: 'adjustment',
        direction: 'debit',
        amount: parseWireAmount(start),
        reason: 'empty the wallet for the test',
        requestId: 'empty',
      });
    }
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await bookUsage(database.db, {
      requestId: 'hot-2',
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: platformCall(1_000, 500),
    });
    expect(await cachedAndPending(developerWalletId)).toEqual({ cached: '0.00000000', pending: '0.00020000' });
    const result = await adjustWallet(database.db, {
      walletId: developerWalletId,
      kind: 'adjustment',
      direction: 'debit',
      amount: parseWireAmount('0.00020000'),
      reason: 'spend the pending credit',
      requestId: 'spend',
    });
    expect(result.replayed).toBe(false);
    expect(await cachedAndPending(developerWalletId)).toEqual({ cached: '0.00000000', pending: '0.00000000' });
    expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  });
});
