import { beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, demoFixture, sql, type TestEnv } from '../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('seed', () => {
  it('opens the demo wallet with 10 USD booked as seed_opening_balance, and the ledger reconciles', async () => {
    const fixture = await demoFixture(testEnv);
    const [wallet] = await sql<{ balance: string }>(testEnv, 'select balance from wallets where id = $1', [fixture.demo_wallet_id]);
    expect(wallet!.balance).toBe('10.00000000');
    const [opening] = await sql<{ kind: string; amount: string }>(
      testEnv,
      `select t.kind, e.amount from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
        where e.wallet_id = $1`,
      [fixture.demo_wallet_id],
    );
    expect(opening).toEqual({ kind: 'seed_opening_balance', amount: '10.00000000' });

    const mismatches = await sql(
      testEnv,
      `select w.id from wallets w left join ledger_entries e on e.wallet_id = w.id
        group by w.id, w.balance having w.balance <> coalesce(sum(e.amount), 0)`,
    );
    expect(mismatches).toEqual([]);
    const unbalanced = await sql(testEnv, 'select transaction_id from ledger_entries group by 1 having sum(amount) <> 0');
    expect(unbalanced).toEqual([]);
  });
});
