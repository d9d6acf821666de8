import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import { FaucetError } from '../wire/errors.ts';
import { formatUsd } from '../money/index.ts';
import { bookUsage } from './book-usage.ts';
import { reserveHold } from './holds.ts';
import { reconcileLedger } from './reconcile.ts';
import {
  balanceOf,
  chargeOf,
  createTestUser,
  fund,
  ledgerViolations,
  openLedgerDatabase,
  platformCall,
  type LedgerTestDatabase,
} from '../../test/ledger-kit.ts';
import { parseWireAmount } from '../money/index.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 25);
});
afterAll(async () => {
  await database.close();
});

const booking = (user: { endUserId: string; appId: string }, requestId: string, rated = chargeOf('1.00000000')) => ({
  requestId,
  appId: user.appId,
  endUserId: user.endUserId,
  featureKey: 'chat',
  rated,
});

describe('bookUsage', () => {
  it('debits the user and credits developer, platform revenue and upstream payable in one balanced transaction', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const rated = platformCall(1_000, 500); // retail 0.0024 = payable 0.002 + developer 0.0002 + platform 0.0002
    const result = await bookUsage(database.db, booking(user, 'book-platform-1', rated));
    expect(result.outcome).toBe('booked');
    if (result.outcome !== 'booked') return;
    expect(formatUsd(result.retailUsd)).toBe('0.00240000');
    expect(formatUsd(result.balanceUsd)).toBe('0.99760000');
    expect(await balanceOf(testEnv, user.walletId)).toBe('0.99760000');

    const entries = await sql<{ kind: string; amount: string }>(
      testEnv,
      `select w.kind, e.amount::text as amount from ledger_entries e join wallets w on w.id = e.wallet_id
        where e.transaction_id = $1 order by e.amount, w.kind`,
      [result.ledgerTransactionId],
    );
    expect(entries).toEqual([
      { kind: 'user', amount: '-0.00240000' },
      { kind: 'developer', amount: '0.00020000' },
      { kind: 'platform_revenue', amount: '0.00020000' },
      { kind: 'platform_upstream_payable', amount: '0.00200000' },
    ]);
    const [event] = await sql<{ route_mode: string; retail_usd: string; ledger_transaction_id: string }>(
      testEnv,
      'select route_mode, retail_usd::text, ledger_transaction_id from usage_events where request_id = $1',
      ['book-platform-1'],
    );
    expect(event).toEqual({ route_mode: 'platform', retail_usd: '0.00240000', ledger_transaction_id: result.ledgerTransactionId });
    expect((await reconcileLedger(database.db)).ok).toBe(true);
  });

  it('lets exactly 10 of 50 concurrent charges through a wallet that affords exactly 10', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) => bookUsage(database.db, booking(user, `race-${user.walletId}-${index}`))),
    );
    expect(results.filter((result) => result.outcome === 'booked')).toHaveLength(10);
    expect(results.filter((result) => result.outcome === 'insufficient_balance')).toHaveLength(40);
    expect(await balanceOf(testEnv, user.walletId)).toBe('0.00000000');
    const [count] = await sql<{ events: number }>(testEnv, 'select count(*)::int as events from usage_events where end_user_id = $1', [
      user.endUserId,
    ]);
    expect(count!.events).toBe(10);
    expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
    expect((await reconcileLedger(database.db)).ok).toBe(true);
  });

  it('books a request id once: a second booking returns the first and moves no money', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '5.00000000');
    const first = await bookUsage(database.db, booking(user, 'once-1'));
    const second = await bookUsage(database.db, booking(user, 'once-1', chargeOf('2.00000000')));
    expect(first.outcome).toBe('booked');
    expect(second.outcome).toBe('duplicate');
    if (first.outcome !== 'booked' || second.outcome !== 'duplicate') return;
    expect(second.usageEventId).toBe(first.usageEventId);
    expect(formatUsd(second.retailUsd)).toBe('1.00000000');
    expect(await balanceOf(testEnv, user.walletId)).toBe('4.00000000');
  });

  it('books a request id once when the same booking arrives concurrently', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '5.00000000');
    const results = await Promise.all(Array.from({ length: 20 }, () => bookUsage(database.db, booking(user, 'concurrent-once'))));
    expect(results.filter((result) => result.outcome === 'booked')).toHaveLength(1);
    expect(results.filter((result) => result.outcome === 'duplicate')).toHaveLength(19);
    expect(await balanceOf(testEnv, user.walletId)).toBe('4.00000000');
    const [row] = await sql<{ events: number; transactions: number }>(
      testEnv,
      `select (select count(*) from usage_events where request_id = 'concurrent-once')::int as events,
              (select count(*) from ledger_transactions where request_id = 'concurrent-once')::int as transactions`,
    );
    expect(row).toEqual({ events: 1, transactions: 1 });
  });

  it('refuses a request id already booked for another end user, without revealing that booking', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    await fund(database, bob.walletId, '1.00000000');
    await bookUsage(database.db, booking(alice, 'shared-id'));
    const error = await bookUsage(database.db, booking(bob, 'shared-id')).catch((caught: unknown) => caught);
    expect(FaucetError.isInstance(error) && error.code).toBe('conflict');
    expect(await balanceOf(testEnv, bob.walletId)).toBe('1.00000000');
  });

  it('refuses token counts beyond what the usage record can hold as invalid_request, not a 500', async () => {
    const user = await createTestUser(testEnv);
    const error = await bookUsage(database.db, booking(user, 'huge-tokens', platformCall(3_000_000_000, 1))).catch(
      (caught: unknown) => caught,
    );
    expect(FaucetError.isInstance(error) && error.code).toBe('invalid_request');
  });

  it('records a free call without a ledger transaction', async () => {
    const user = await createTestUser(testEnv);
    const result = await bookUsage(database.db, booking(user, 'free-1', chargeOf('0.00000000')));
    expect(result.outcome).toBe('booked');
    if (result.outcome !== 'booked') return;
    expect(result.ledgerTransactionId).toBeNull();
    const [row] = await sql<{ events: number }>(testEnv, "select count(*)::int as events from usage_events where request_id = 'free-1'");
    expect(row!.events).toBe(1);
  });

  it('refuses a charge that only fits when other requests’ holds are ignored', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'other-hold', amount: parseWireAmount('8.00000000') });
    const result = await bookUsage(database.db, booking(user, 'over-holds', chargeOf('3.00000000')));
    expect(result.outcome).toBe('insufficient_balance');
    expect(await balanceOf(testEnv, user.walletId)).toBe('10.00000000');
    const [row] = await sql<{ events: number }>(
      testEnv,
      "select count(*)::int as events from usage_events where request_id = 'over-holds'",
    );
    expect(row!.events).toBe(0);
  });

  it('leaves nothing behind when a fault strikes between two writes of a booking', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: 'faulty', amount: parseWireAmount('0.50000000') });
    const before = await sql<{ transactions: number; entries: number; developer: string }>(
      testEnv,
      `select (select count(*) from ledger_transactions)::int as transactions, (select count(*) from ledger_entries)::int as entries,
              (select sum(faucet_wallet_balance(id))::text from wallets where kind = 'developer') as developer`,
    );
    // The fault: the last write, the credits of the developer and platform accounts, fails after the
    // usage event, the transaction, its entries and the user's debit have been written.
    await sql(
      testEnv,
      `create function fail_developer_credit() returns trigger language plpgsql as $$
       begin raise exception 'injected fault'; end $$;
       create trigger fail_developer_credit before insert on wallet_balance_deltas for each row
       execute function fail_developer_credit()`,
    );
    try {
      const error = await bookUsage(database.db, booking(user, 'faulty', platformCall(1_000, 1_000))).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
    } finally {
      await sql(testEnv, 'drop trigger fail_developer_credit on wallet_balance_deltas; drop function fail_developer_credit()');
    }
    const after = await sql<{ transactions: number; entries: number; developer: string }>(
      testEnv,
      `select (select count(*) from ledger_transactions)::int as transactions, (select count(*) from ledger_entries)::int as entries,
              (select sum(faucet_wallet_balance(id))::text from wallets where kind = 'developer') as developer`,
    );
    expect(after).toEqual(before);
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
    const [row] = await sql<{ events: number; hold_status: string }>(
      testEnv,
      `select (select count(*) from usage_events where request_id = 'faulty')::int as events,
              (select status from balance_holds where request_id = 'faulty') as hold_status`,
    );
    expect(row).toEqual({ events: 0, hold_status: 'active' });
    // And the same booking goes through once the fault is gone.
    expect((await bookUsage(database.db, booking(user, 'faulty', platformCall(1_000, 1_000)))).outcome).toBe('booked');
  });
});
