/**
 * The clawback review read as an attacker and as a tired operator: reversals sent many times at once,
 * and racing Stripe's own reversal of the same clawback (a won dispute). The developer is credited
 * once, nobody gets a 500, and the books agree afterwards.
 */
import { Pool } from '@neondatabase/serverless';
import { beforeAll, describe, expect, it } from 'vitest';
import { disputeEvent, randomStripeId } from '../../../../scripts/lib/stripe-events.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { balanceOf, chargeOf, openLedgerDatabase, type LedgerTestDatabase, expectReconciledAndAudited } from '../../../test/ledger-kit.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
  return () => database.close();
});

interface Clawback {
  id: string;
  status: string;
  developer_wallet_id: string;
  amount_usd: string;
}

/** A user who paid 10 USD, spent 9 of it with the demo developer, then disputed the whole charge: a booked clawback. */
async function disputedSpender() {
  const checkout = await paidCheckout(testEnv, '10.00000000');
  const { app_id: appId } = await demoFixture(testEnv);
  const spent = await bookUsage(database.db, {
    requestId: `spend-${crypto.randomUUID()}`,
    appId,
    endUserId: checkout.endUserId,
    featureKey: 'chat',
    rated: chargeOf('9.00000000'),
  });
  expect(spent.outcome).toBe('booked');
  const dispute = { id: randomStripeId('dp'), charge: checkout.chargeId, payment_intent: checkout.paymentIntentId, amount: 1000 };
  expect((await deliver(testEnv, disputeEvent(dispute))).body.outcome).toBe('chargeback_booked');
  const [clawback] = await sql<{ id: string; developer_wallet_id: string; amount: string }>(
    testEnv,
    `select id, developer_wallet_id, amount::text from revenue_clawbacks where user_wallet_id = $1 and status = 'booked'`,
    [checkout.walletId],
  );
  if (!clawback) throw new Error('no clawback booked');
  const won = () => deliver(testEnv, disputeEvent({ ...dispute, status: 'won' }, { type: 'charge.dispute.closed' }));
  return { checkout, clawback, won };
}

const reverse = (id: string, note = 'review: not the developer’s fault') =>
  call(api(), testEnv, `/v1/admin/clawbacks/${id}/reverse`, { token: adminToken, json: { note } });

/** What a reversal may change: the developer's credit back and its audit trail. */
async function reversals(clawbackId: string) {
  const [row] = await sql<{ status: string; transactions: number; audits: number }>(
    testEnv,
    `select (select status from revenue_clawbacks where id = $1) as status,
            (select count(*)::int from ledger_transactions where kind = 'revenue_clawback_reversal'
              and metadata ->> 'clawback_id' = $1::text) as transactions,
            (select count(*)::int from audit_logs where action = 'clawback.reversed' and target_id = $1::text) as audits`,
    [clawbackId],
  );
  return row!;
}

const units = (value: string) => BigInt(value.replace('.', ''));

/** A transaction on a connection of its own, held open until `end` (commit). */
async function openTransaction() {
  const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: 1 });
  const client = await pool.connect();
  await client.query('begin');
  return {
    query: (text: string, params: unknown[]) => client.query(text, params),
    async end() {
      try {
        await client.query('commit');
      } finally {
        client.release();
        await pool.end();
      }
    },
  };
}

/** Waits until at least `count` statements of this test's database wait on a lock (5 s at most). */
async function lockWaiters(count: number) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const [row] = await sql<{ waiting: number }>(
      testEnv,
      `select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
    );
    if (row!.waiting >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`fewer than ${count} statements wait on a lock`);
}

describe('POST /v1/admin/clawbacks/{id}/reverse under attack', () => {
  it('ten reversals at once: every one answers 200 reversed, the developer is credited once', async () => {
    const { clawback } = await disputedSpender();
    const before = await balanceOf(testEnv, clawback.developer_wallet_id);
    const results = await Promise.all(Array.from({ length: 10 }, (_, index) => reverse(clawback.id, `operator ${index}`)));
    expect(results.map((result) => result.status)).toEqual(Array(10).fill(200));
    for (const result of results) expect(((await result.json()) as Clawback).status).toBe('reversed');
    expect(await reversals(clawback.id)).toEqual({ status: 'reversed', transactions: 1, audits: 1 });
    const after = await balanceOf(testEnv, clawback.developer_wallet_id);
    expect(units(after) - units(before)).toBe(units(clawback.amount));
    await expectReconciledAndAudited(testEnv);
  });

  it('an operator reversal meeting the won dispute that reverses the same clawback: no deadlock, credited once', async () => {
    const { checkout, clawback, won } = await disputedSpender();
    const developerBefore = await balanceOf(testEnv, clawback.developer_wallet_id);
    // Hold the developer wallet so both arrive while the other is mid-way: the won dispute has locked the
    // user's wallet and waits for the developer's; the operator's reversal comes next.
    const holder = await openTransaction();
    await holder.query('select 1 from wallets where id = $1 for no key update', [clawback.developer_wallet_id]);
    const webhook = won();
    await lockWaiters(1);
    const operator = reverse(clawback.id);
    await lockWaiters(2);
    await holder.end();
    const [webhookResult, operatorResult] = await Promise.all([webhook, operator]);
    expect(webhookResult.body.outcome, JSON.stringify(webhookResult.body)).toBe('chargeback_reversed');
    expect(operatorResult.status, await operatorResult.clone().text()).toBe(200);
    expect(((await operatorResult.json()) as Clawback).status).toBe('reversed');
    expect(await reversals(clawback.id)).toEqual({ status: 'reversed', transactions: 1, audits: 1 });
    const developerAfter = await balanceOf(testEnv, clawback.developer_wallet_id);
    expect(units(developerAfter) - units(developerBefore)).toBe(units(clawback.amount));
    // The user got the disputed 10 USD back once: 1 left of the 10 after spending 9.
    expect(await balanceOf(testEnv, checkout.walletId)).toBe('1.00000000');
    await expectReconciledAndAudited(testEnv);
  });

  it('operator reversals and the won dispute all at once: every one answers 200, credited once', async () => {
    const { clawback, won } = await disputedSpender();
    const developerBefore = await balanceOf(testEnv, clawback.developer_wallet_id);
    const [webhook, ...operators] = await Promise.all([won(), reverse(clawback.id), reverse(clawback.id), reverse(clawback.id)]);
    expect(webhook.body.outcome).toBe('chargeback_reversed');
    for (const operator of operators) expect(operator.status).toBe(200);
    expect(await reversals(clawback.id)).toEqual({ status: 'reversed', transactions: 1, audits: 1 });
    const developerAfter = await balanceOf(testEnv, clawback.developer_wallet_id);
    expect(units(developerAfter) - units(developerBefore)).toBe(units(clawback.amount));
    await expectReconciledAndAudited(testEnv);
  });

  it('a reversal after the won dispute already reversed it changes nothing', async () => {
    const { clawback, won } = await disputedSpender();
    expect((await won()).body.outcome).toBe('chargeback_reversed');
    const developer = await balanceOf(testEnv, clawback.developer_wallet_id);
    const again = await reverse(clawback.id);
    expect(again.status).toBe(200);
    expect(((await again.json()) as Clawback).status).toBe('reversed');
    expect(await balanceOf(testEnv, clawback.developer_wallet_id)).toBe(developer);
    expect(await reversals(clawback.id)).toEqual({ status: 'reversed', transactions: 1, audits: 1 });
    await expectReconciledAndAudited(testEnv);
  });
});
