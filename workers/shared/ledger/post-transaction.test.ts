import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, demoFixture, sql, type TestEnv } from '../../test/harness.ts';
import { FaucetError } from '../wire/errors.ts';
import { parseWireAmount, usdFromUnits } from '../money/index.ts';
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
import { postTransaction } from './post-transaction.ts';
import { rollUpBalances } from './roll-up.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 20);
});
afterAll(async () => {
  await database.close();
});

const codeOf = (error: unknown) => (FaucetError.isInstance(error) ? error.code : error);

describe('postTransaction', () => {
  it('refuses entries that do not sum to zero, in the code and in the database', async () => {
    const user = await createTestUser(testEnv);
    const [clearing] = await sql<{ id: string }>(testEnv, "select id from wallets where kind = 'payment_clearing'");
    const unbalanced = [
      { walletId: user.walletId, amount: parseWireAmount('1.00000000') },
      { walletId: clearing!.id, amount: usdFromUnits(-99_999_999n) },
    ];
    expect(codeOf(await postTransaction(database.db, { kind: 'top_up', entries: unbalanced }).catch((error) => error))).toBe(
      'invalid_request',
    );
    const direct = await sql(
      testEnv,
      `select * from faucet_post_transaction('top_up', null, null, null, '{}', array[$1, $2]::uuid[], array[1, -0.99999999]::numeric[])`,
      [user.walletId, clearing!.id],
    ).catch((error: { code?: string }) => error.code);
    expect(direct).toBe('22023');
    expect(await balanceOf(testEnv, user.walletId)).toBe('0.00000000');
  });

  it('answers not_found for a wallet that does not exist', async () => {
    const user = await createTestUser(testEnv);
    const entries = [
      { walletId: user.walletId, amount: parseWireAmount('1.00000000') },
      { walletId: crypto.randomUUID(), amount: usdFromUnits(-100_000_000n) },
    ];
    expect(codeOf(await postTransaction(database.db, { kind: 'top_up', entries }).catch((error) => error))).toBe('not_found');
  });

  it('posts an idempotency key once, also when the same adjustment arrives concurrently', async () => {
    const user = await createTestUser(testEnv);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        adjustWallet(database.db, {
          walletId: user.walletId,
          kind: 'adjustment',
          direction: 'credit',
          amount: parseWireAmount('1.00000000'),
          reason: 'once',
          idempotencyKey: 'concurrent-key',
          requestId: 'r',
        }),
      ),
    );
    expect(results.filter((result) => !result.replayed)).toHaveLength(1);
    expect(new Set(results.map((result) => result.adjustment.transaction_id)).size).toBe(1);
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
  });

  it('never deadlocks: 16 writers booking usage while the developer wallet is debited and balances roll up', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    const users = await Promise.all(Array.from({ length: 16 }, () => createTestUser(testEnv)));
    await Promise.all(users.map((user) => fund(database, user.walletId, '1.00000000')));
    const bookings = users.flatMap((user, writer) =>
      Array.from({ length: 5 }, (_, index) =>
        bookUsage(database.db, {
          requestId: `mix-${writer}-${index}`,
          appId: user.appId,
          endUserId: user.endUserId,
          featureKey: 'chat',
          rated: platformCall(1_000, 500),
        }),
      ),
    );
    const housekeeping = Array.from({ length: 5 }, () => rollUpBalances(database.db));
    const debits = Array.from({ length: 5 }, (_, index) =>
      adjustWallet(database.db, {
        walletId: developerWalletId,
        kind: 'adjustment',
        direction: 'debit',
        amount: parseWireAmount('0.00000001'),
        reason: 'debit under load',
        requestId: `debit-${index}`,
      }).catch((error: unknown) => codeOf(error)),
    );
    const settled = await Promise.allSettled([...bookings, ...housekeeping, ...debits]);
    expect(settled.filter((result) => result.status === 'rejected')).toEqual([]);
    const booked = await Promise.all(bookings);
    expect(booked.every((result) => result.outcome === 'booked')).toBe(true);
    expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  });
});
