import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import { formatUsd, parseWireAmount } from '../money/index.ts';
import { bookUsage } from './book-usage.ts';
import { expireHolds, releaseHold, reserveHold } from './holds.ts';
import {
  balanceOf,
  chargeOf,
  createTestUser,
  fund,
  ledgerViolations,
  openLedgerDatabase,
  type LedgerTestDatabase,
} from '../../test/ledger-kit.ts';
import { getWalletBalance } from './wallet-balance.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 25);
});
afterAll(async () => {
  await database.close();
});

const usd = parseWireAmount;

async function view(walletId: string) {
  const wallet = await getWalletBalance(database.db, walletId);
  return { balance: formatUsd(wallet!.balanceUsd), held: formatUsd(wallet!.heldUsd), available: formatUsd(wallet!.availableUsd) };
}

describe('holds', () => {
  it('reserve lowers what is available, not the balance', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const hold = await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-1', amount: usd('3.00000000') });
    expect(hold.outcome).toBe('reserved');
    expect(formatUsd(hold.availableUsd)).toBe('7.00000000');
    expect(await view(user.walletId)).toEqual({ balance: '10.00000000', held: '3.00000000', available: '7.00000000' });
  });

  it('settling books the actual cost and releases the rest of the hold', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-settle', amount: usd('3.00000000') });
    const booked = await bookUsage(database.db, {
      requestId: 'h-settle',
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: chargeOf('1.25000000'),
    });
    expect(booked.outcome).toBe('booked');
    expect(await view(user.walletId)).toEqual({ balance: '8.75000000', held: '0.00000000', available: '8.75000000' });
    const [hold] = await sql<{ status: string }>(testEnv, "select status from balance_holds where request_id = 'h-settle'");
    expect(hold!.status).toBe('settled');
  });

  it('settles a cost above the hold when the unreserved balance covers it', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '2.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-over', amount: usd('1.00000000') });
    const booked = await bookUsage(database.db, {
      requestId: 'h-over',
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: chargeOf('1.50000000'),
    });
    expect(booked.outcome).toBe('booked');
    expect(await view(user.walletId)).toEqual({ balance: '0.50000000', held: '0.00000000', available: '0.50000000' });
  });

  it('release frees the whole hold and moves no money', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-release', amount: usd('1.00000000') });
    expect(await releaseHold(database.db, 'h-release')).toBe(true);
    expect(await releaseHold(database.db, 'h-release')).toBe(false);
    expect(await view(user.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
  });

  it('refuses a hold larger than what is available', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-a', amount: usd('0.60000000') });
    const refused = await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-b', amount: usd('0.40000001') });
    expect(refused.outcome).toBe('insufficient_balance');
    expect(formatUsd(refused.availableUsd)).toBe('0.40000000');
    const [row] = await sql<{ holds: number }>(testEnv, "select count(*)::int as holds from balance_holds where request_id = 'h-b'");
    expect(row!.holds).toBe(0);
  });

  it('returns the existing hold when the same request reserves again', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const first = await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-twice', amount: usd('0.70000000') });
    const second = await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-twice', amount: usd('0.70000000') });
    expect(second.outcome).toBe('duplicate');
    expect(second.outcome !== 'insufficient_balance' && first.outcome !== 'insufficient_balance' && second.holdId === first.holdId).toBe(
      true,
    );
    expect((await view(user.walletId)).held).toBe('0.70000000');
  });

  it('reserves exactly what fits when 30 requests reserve at once', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        reserveHold(database.db, { endUserId: user.endUserId, requestId: `h-race-${user.walletId}-${index}`, amount: usd('1.00000000') }),
      ),
    );
    expect(results.filter((result) => result.outcome === 'reserved')).toHaveLength(10);
    expect(await view(user.walletId)).toEqual({ balance: '10.00000000', held: '10.00000000', available: '0.00000000' });
  });

  it('stops counting a hold once it has expired', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'h-expiring', amount: usd('1.00000000') });
    expect((await view(user.walletId)).available).toBe('0.00000000');
    // Move the hold's expiry into the past instead of waiting for it.
    await sql(testEnv, "update balance_holds set expires_at = now() - interval '1 second' where request_id = 'h-expiring'");
    expect(await view(user.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
    const charged = await bookUsage(database.db, {
      requestId: 'after-expiry',
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: chargeOf('1.00000000'),
    });
    expect(charged.outcome).toBe('booked');
    expect(await expireHolds(database.db)).toBeGreaterThanOrEqual(1);
    const [hold] = await sql<{ status: string }>(testEnv, "select status from balance_holds where request_id = 'h-expiring'");
    expect(hold!.status).toBe('expired');
    expect(await balanceOf(testEnv, user.walletId)).toBe('0.00000000');
    expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  });
});
