import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { balanceOf, createTestUser, fund, ledgerViolations, openLedgerDatabase, platformCall } from '../../test/ledger-kit.ts';
import { createTestEnv, demoFixture, sql, type TestEnv } from '../../test/harness.ts';
import worker from './index.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('scheduled maintenance', () => {
  it('expires stale holds and rolls pending revenue into balance rows without changing any balance', async () => {
    const database = openLedgerDatabase(testEnv, 2);
    try {
      const user = await createTestUser(testEnv);
      await fund(database, user.walletId, '3.00000000');
      await bookUsage(database.db, {
        requestId: `maintenance-${crypto.randomUUID()}`,
        appId: user.appId,
        endUserId: user.endUserId,
        featureKey: 'chat',
        rated: platformCall(1000, 1000),
      });
      await sql(
        testEnv,
        `insert into balance_holds (wallet_id, request_id, amount, expires_at) values ($1, $2, 1, now() - interval '1 minute')`,
        [user.walletId, `stale-${crypto.randomUUID()}`],
      );
      const { developer_wallet_id: developerWallet } = await demoFixture(testEnv);
      const before = await balanceOf(testEnv, developerWallet);

      const controller = createScheduledController({ scheduledTime: Date.now(), cron: '*/5 * * * *' });
      const ctx = createExecutionContext();
      worker.scheduled(controller, testEnv, ctx);
      await waitOnExecutionContext(ctx);

      const [state] = await sql<{ active_stale: number; deltas: number }>(
        testEnv,
        `select (select count(*) from balance_holds where status = 'active' and expires_at <= now())::int as active_stale,
                (select count(*) from wallet_balance_deltas)::int as deltas`,
      );
      expect(state).toEqual({ active_stale: 0, deltas: 0 });
      const [row] = await sql<{ balance: string }>(testEnv, 'select balance::text from wallets where id = $1', [developerWallet]);
      expect(row!.balance).toBe(before);
      expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
    } finally {
      await database.close();
    }
  });
});
