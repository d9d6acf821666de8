/**
 * An operator's debit, read as a tired operator's typo and as an attacker's script: every kind needs
 * the wallet's available balance (the seed's rule), books nothing when refused, and claws back nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { reserveHold } from '#shared/ledger/holds.ts';
import { addUsd, formatUsd, parseWireAmount, usdFromUnits } from '#shared/money/index.ts';
import {
  balanceOf,
  chargeOf,
  createTestUser,
  fund,
  openLedgerDatabase,
  type LedgerTestDatabase,
  expectReconciledAndAudited,
} from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
  return () => database.close();
});

const adjust = (walletId: string, json: Record<string, unknown>) =>
  call(api(), testEnv, `/v1/admin/wallets/${walletId}/adjustments`, { token: adminToken, json });

/** Everything a debit could have written about a wallet. */
const traces = async (walletId: string) =>
  (
    await sql<{ transactions: number; receivables: number; clawbacks: number; audits: number }>(
      testEnv,
      `select (select count(*)::int from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
                where e.wallet_id = $1 and t.kind in ('adjustment', 'refund', 'chargeback')) as transactions,
              (select count(*)::int from receivables where wallet_id = $1) as receivables,
              (select count(*)::int from revenue_clawbacks where user_wallet_id = $1) as clawbacks,
              (select count(*)::int from audit_logs where target_id = $1::text and action in ('wallet.adjustment', 'wallet.refund', 'wallet.chargeback')) as audits`,
      [walletId],
    )
  )[0]!;

/** An end user holding about 11 USD after spending a little, as on a fresh `npm start`. */
async function userWhoSpent() {
  const user = await createTestUser(testEnv);
  await fund(database, user.walletId, '11.00000000');
  const booked = await bookUsage(database.db, {
    requestId: `spend-${crypto.randomUUID()}`,
    appId: user.appId,
    endUserId: user.endUserId,
    featureKey: 'chat',
    rated: chargeOf('0.00005760'),
  });
  expect(booked.outcome).toBe('booked');
  return user;
}

describe('POST /v1/admin/wallets/{id}/adjustments: a debit needs the available balance, whatever its kind', () => {
  it('refuses the typo 999999.00000000 of every kind with 402, booking nothing and clawing back nothing', async () => {
    const user = await userWhoSpent();
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    const userBefore = await balanceOf(testEnv, user.walletId);
    const developerBefore = await balanceOf(testEnv, developerWalletId);
    for (const kind of ['chargeback', 'refund', 'adjustment']) {
      const response = await adjust(user.walletId, { kind, direction: 'debit', amount_usd: '999999.00000000', reason: 'typo' });
      expect(response.status, kind).toBe(402);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    }
    expect(await balanceOf(testEnv, user.walletId)).toBe(userBefore);
    expect(await balanceOf(testEnv, developerWalletId)).toBe(developerBefore);
    expect(await traces(user.walletId)).toEqual({ transactions: 0, receivables: 0, clawbacks: 0, audits: 0 });
    await expectReconciledAndAudited(testEnv);
  });

  it('refuses a debit one unit past the available balance and books one of exactly that balance', async () => {
    const user = await userWhoSpent();
    const balance = await balanceOf(testEnv, user.walletId);
    const over = formatUsd(addUsd(parseWireAmount(balance), usdFromUnits(1n)));
    const refused = await adjust(user.walletId, { kind: 'chargeback', direction: 'debit', amount_usd: over, reason: 'bank' });
    expect(refused.status).toBe(402);
    const exact = await adjust(user.walletId, { kind: 'chargeback', direction: 'debit', amount_usd: balance, reason: 'bank' });
    expect(exact.status).toBe(201);
    expect(await balanceOf(testEnv, user.walletId)).toBe('0.00000000');
    expect(await traces(user.walletId)).toMatchObject({ transactions: 1, receivables: 0, clawbacks: 0, audits: 1 });
    await expectReconciledAndAudited(testEnv);
  });

  it('counts the holds of calls in flight: money a call holds cannot be debited', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '5.00000000');
    const hold = await reserveHold(database.db, {
      endUserId: user.endUserId,
      requestId: `hold-${crypto.randomUUID()}`,
      amount: parseWireAmount('4.00000000'),
      ttlSeconds: 600,
    });
    expect(hold.outcome).toBe('reserved');
    const response = await adjust(user.walletId, { kind: 'refund', direction: 'debit', amount_usd: '2.00000000', reason: 'refund' });
    expect(response.status).toBe(402);
    expect(await balanceOf(testEnv, user.walletId)).toBe('5.00000000');
  });

  it('lets one of two debits raced against the same balance through, never both', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const debit = (key: string) =>
      adjust(user.walletId, { kind: 'chargeback', direction: 'debit', amount_usd: '6.00000000', reason: 'bank', idempotency_key: key });
    const statuses = (await Promise.all([debit('race-a'), debit('race-b')])).map((response) => response.status).sort();
    expect(statuses).toEqual([201, 402]);
    expect(await balanceOf(testEnv, user.walletId)).toBe('4.00000000');
    await expectReconciledAndAudited(testEnv);
  });

  it('refuses a developer wallet debit past its balance too', async () => {
    const { developer_wallet_id: developerWalletId } = await demoFixture(testEnv);
    const before = await balanceOf(testEnv, developerWalletId);
    const response = await adjust(developerWalletId, {
      kind: 'adjustment',
      direction: 'debit',
      amount_usd: '99999999.00000000',
      reason: 'typo',
    });
    expect(response.status).toBe(402);
    expect(await balanceOf(testEnv, developerWalletId)).toBe(before);
    await expectReconciledAndAudited(testEnv);
  });
});
