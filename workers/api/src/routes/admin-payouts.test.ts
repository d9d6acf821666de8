import { beforeAll, describe, expect, it } from 'vitest';
import { getWalletBalance } from '#shared/ledger/wallet-balance.ts';
import { postTransaction } from '#shared/ledger/post-transaction.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { balanceOf, createTestUser, fund, openLedgerDatabase, platformCall, type LedgerTestDatabase } from '../../../test/ledger-kit.ts';
import { formatUsd, negateUsd, parseWireAmount } from '#shared/money/index.ts';
import { adminToken, api, call, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 12);
  return () => database.close();
});

interface Payout {
  id: string;
  wallet_id: string;
  developer_id: string;
  amount_usd: string;
  status: string;
  operator_note: string | null;
  ledger_transaction_id: string | null;
}

/** A new developer with a wallet holding `balance` (booked through the ledger). */
async function developerWithBalance(balance: string) {
  const suffix = crypto.randomUUID();
  const [row] = await sql<{ developer_id: string; wallet_id: string }>(
    testEnv,
    `with d as (insert into developers (name, email) values ($1, $2) returning id)
     insert into wallets (kind, developer_id) select 'developer', id from d returning developer_id, id as wallet_id`,
    [`Dev ${suffix}`, `${suffix}@example.test`],
  );
  if (balance !== '0.00000000') await fund(database, row!.wallet_id, balance);
  return { developerId: row!.developer_id, walletId: row!.wallet_id };
}

const admin = (path: string, json?: unknown) =>
  call(api(), testEnv, path, { method: 'POST', token: adminToken, ...(json === undefined ? {} : { json }) });
const runMock = async (threshold: string) => {
  const response = await admin('/v1/admin/payouts/run-mock', { threshold_usd: threshold });
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: Payout[] }).data;
};
const approve = (id: string, note = 'checked by operator') => admin(`/v1/admin/payouts/${id}/approve`, { operator_note: note });
const markPaid = (id: string) => admin(`/v1/admin/payouts/${id}/mark-paid`);
const statusOf = async (id: string) =>
  (await sql<{ status: string }>(testEnv, 'select status from payouts where id = $1', [id]))[0]!.status;
const auditActions = async (id: string) =>
  (
    await sql<{ action: string }>(testEnv, `select action from audit_logs where target_type = 'payout' and target_id = $1 order by id`, [
      id,
    ])
  ).map((row) => row.action);
const available = async (walletId: string) => formatUsd((await getWalletBalance(database.db, walletId))!.availableUsd);
const balance = async (walletId: string) => formatUsd((await getWalletBalance(database.db, walletId))!.balanceUsd);

async function expectInvalidState(response: Response) {
  expect(response.status).toBe(409);
  expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_state');
}

describe('POST /v1/admin/payouts/run-mock', () => {
  it('creates one pending payout per developer wallet at or above the threshold, reserving its available balance', async () => {
    const rich = await developerWithBalance('150.00000000');
    const exact = await developerWithBalance('100.00000000');
    const poor = await developerWithBalance('99.99999999');
    const created = await runMock('100.00000000');
    const mine = created.filter((payout) => [rich.walletId, exact.walletId, poor.walletId].includes(payout.wallet_id));
    expect(mine.map((payout) => [payout.wallet_id, payout.amount_usd, payout.status]).sort()).toEqual(
      [
        [rich.walletId, '150.00000000', 'pending'],
        [exact.walletId, '100.00000000', 'pending'],
      ].sort(),
    );
    // No money moved, but the reserved amount is no longer available to anything else.
    expect(await balance(rich.walletId)).toBe('150.00000000');
    expect(await available(rich.walletId)).toBe('0.00000000');
    const debit = await postTransaction(database.db, {
      kind: 'adjustment',
      entries: [
        { walletId: rich.walletId, amount: negateUsd(parseWireAmount('1.00000000')) },
        {
          walletId: (await sql<{ id: string }>(testEnv, `select faucet_system_wallet('platform_adjustments') as id`))[0]!.id,
          amount: parseWireAmount('1.00000000'),
        },
      ],
    });
    expect(debit.outcome).toBe('insufficient_balance');
    expect(await auditActions(mine[0]!.id)).toEqual(['payout.created']);

    // A wallet with an open payout gets no second one, whatever it earns meanwhile.
    await fund(database, rich.walletId, '500.00000000');
    const again = await runMock('100.00000000');
    expect(again.filter((payout) => payout.wallet_id === rich.walletId)).toEqual([]);
    expect(await available(rich.walletId)).toBe('500.00000000');
  });

  it('pays out usage revenue still pending on the developer wallet', async () => {
    // Usage credits the app's developer through append-only deltas, not the balance row.
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '5.00000000');
    const booked = await bookUsage(database.db, {
      requestId: `payout-revenue-${crypto.randomUUID()}`,
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: platformCall(200_000, 200_000),
    });
    expect(booked.outcome).toBe('booked');
    const { developer_wallet_id: walletId } = await demoFixture(testEnv);
    const owed = await balanceOf(testEnv, walletId);
    expect(owed).not.toBe('0.00000000');

    const created = await runMock('0.00000001');
    const payout = created.find((candidate) => candidate.wallet_id === walletId);
    expect(payout?.amount_usd).toBe(owed);
    expect(await available(walletId)).toBe('0.00000000');
  });

  it('creates one payout per wallet when runs overlap', async () => {
    const developer = await developerWithBalance('33.00000000');
    const runs = await Promise.all(Array.from({ length: 5 }, () => runMock('33.00000000')));
    expect(runs.flat().filter((payout) => payout.wallet_id === developer.walletId)).toHaveLength(1);
    expect(await available(developer.walletId)).toBe('0.00000000');
  });

  it('refuses a threshold that is not a positive 8-digit amount', async () => {
    for (const threshold of ['0.00000000', '10', 10, '-1.00000000', '1.0']) {
      const response = await admin('/v1/admin/payouts/run-mock', { threshold_usd: threshold });
      expect(response.status, String(threshold)).toBe(400);
    }
  });

  it('needs the admin token', async () => {
    const response = await call(api(), testEnv, '/v1/admin/payouts/run-mock', {
      json: { threshold_usd: '1.00000000' },
      token: 'wrong-token-0123456789',
    });
    expect(response.status).toBe(401);
  });
});

describe('payout state machine', () => {
  it('pending → processing → paid, booking the payout in the ledger with audit rows', async () => {
    const developer = await developerWithBalance('42.50000000');
    const [payout] = (await runMock('40.00000000')).filter((row) => row.wallet_id === developer.walletId);

    const approved = await approve(payout!.id, 'KYC ok');
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({
      id: payout!.id,
      status: 'processing',
      operator_note: 'KYC ok',
      ledger_transaction_id: null,
    });
    expect(await balance(developer.walletId)).toBe('42.50000000');

    const paid = await admin(`/v1/admin/payouts/${payout!.id}/mark-paid`, { operator_note: 'wire ref 123' });
    expect(paid.status).toBe(200);
    const body = (await paid.json()) as Payout;
    expect(body).toMatchObject({ status: 'paid', amount_usd: '42.50000000', operator_note: 'wire ref 123' });
    expect(body.ledger_transaction_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await balance(developer.walletId)).toBe('0.00000000');
    const entries = await sql<{ kind: string; amount: string }>(
      testEnv,
      `select w.kind, e.amount::text as amount from ledger_entries e join wallets w on w.id = e.wallet_id
       where e.transaction_id = $1 order by e.amount`,
      [body.ledger_transaction_id],
    );
    expect(entries).toEqual([
      { kind: 'developer', amount: '-42.50000000' },
      { kind: 'payment_clearing', amount: '42.50000000' },
    ]);
    expect((await sql(testEnv, `select status from balance_holds where request_id = $1`, [`payout:${payout!.id}`]))[0]).toEqual({
      status: 'settled',
    });
    expect(await auditActions(payout!.id)).toEqual(['payout.created', 'payout.approved', 'payout.paid']);

    // Once paid, the wallet may get a new payout when it earns again.
    await fund(database, developer.walletId, '50.00000000');
    expect((await runMock('40.00000000')).filter((row) => row.wallet_id === developer.walletId)).toHaveLength(1);
  });

  it('answers 409 invalid_state to every other transition and changes nothing', async () => {
    const developer = await developerWithBalance('30.00000000');
    const [payout] = (await runMock('30.00000000')).filter((row) => row.wallet_id === developer.walletId);
    const id = payout!.id;

    await expectInvalidState(await markPaid(id)); // pending → paid skips approval
    expect(await statusOf(id)).toBe('pending');
    expect(await balance(developer.walletId)).toBe('30.00000000');

    expect((await approve(id)).status).toBe(200);
    await expectInvalidState(await approve(id, 'twice')); // processing → processing
    expect((await sql(testEnv, 'select operator_note from payouts where id = $1', [id]))[0]).toEqual({
      operator_note: 'checked by operator',
    });

    expect((await markPaid(id)).status).toBe(200);
    await expectInvalidState(await markPaid(id)); // paid → paid
    await expectInvalidState(await approve(id)); // paid → processing
    expect(await statusOf(id)).toBe('paid');
    expect(await balance(developer.walletId)).toBe('0.00000000');
    expect(await auditActions(id)).toEqual(['payout.created', 'payout.approved', 'payout.paid']);
  });

  it('answers 404 for an unknown or malformed id and 400 without an operator note', async () => {
    expect((await approve(crypto.randomUUID())).status).toBe(404);
    expect((await markPaid(crypto.randomUUID())).status).toBe(404);
    expect((await approve('not-a-uuid')).status).toBe(404);
    const developer = await developerWithBalance('5.00000000');
    const [payout] = (await runMock('5.00000000')).filter((row) => row.wallet_id === developer.walletId);
    expect((await admin(`/v1/admin/payouts/${payout!.id}/approve`, {})).status).toBe(400);
    expect((await admin(`/v1/admin/payouts/${payout!.id}/approve`, { operator_note: '   ' })).status).toBe(400);
    expect(await statusOf(payout!.id)).toBe('pending');
  });

  it('lets exactly one of concurrent approvals and of concurrent mark-paids succeed; the ledger reconciles', async () => {
    const developer = await developerWithBalance('64.00000000');
    const [payout] = (await runMock('64.00000000')).filter((row) => row.wallet_id === developer.walletId);
    const approvals = await Promise.all(Array.from({ length: 10 }, (_, i) => approve(payout!.id, `operator ${i}`)));
    expect(approvals.map((response) => response.status).sort()).toEqual([200, ...Array(9).fill(409)]);

    const payments = await Promise.all(Array.from({ length: 10 }, () => markPaid(payout!.id)));
    expect(payments.map((response) => response.status).sort()).toEqual([200, ...Array(9).fill(409)]);
    expect(await balance(developer.walletId)).toBe('0.00000000');
    const [count] = await sql<{ n: number }>(
      testEnv,
      `select count(*)::int as n from ledger_transactions where kind = 'payout' and idempotency_key = $1`,
      [`payout:${payout!.id}`],
    );
    expect(count!.n).toBe(1);
    expect(await auditActions(payout!.id)).toEqual(['payout.created', 'payout.approved', 'payout.paid']);
    const reconciliation = await reconcileLedger(database.db);
    expect(reconciliation.ok, JSON.stringify(reconciliation)).toBe(true);
  });
});

describe('GET /v1/admin/payouts', () => {
  it('lists payouts newest first, filtered by status', async () => {
    const developer = await developerWithBalance('9.00000000');
    const [payout] = (await runMock('9.00000000')).filter((row) => row.wallet_id === developer.walletId);
    const response = await call(api(), testEnv, '/v1/admin/payouts?status=pending&limit=500', { token: adminToken });
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: Payout[] };
    expect(data.every((row) => row.status === 'pending')).toBe(true);
    expect(data.map((row) => row.id)).toContain(payout!.id);
    expect((await call(api(), testEnv, '/v1/admin/payouts?status=lost', { token: adminToken })).status).toBe(400);
  });
});
