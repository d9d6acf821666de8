import { beforeAll, describe, expect, it } from 'vitest';
import { getWalletBalance } from '#shared/ledger/wallet-balance.ts';
import { fund, openLedgerDatabase, type LedgerTestDatabase } from '../../../test/ledger-kit.ts';
import { formatUsd } from '#shared/money/index.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 8);
  return () => database.close();
});

interface Payout {
  id: string;
  wallet_id: string;
  status: string;
  operator_note: string | null;
  closed_at: string | null;
}

async function pendingPayout(balance = '120.00000000') {
  const suffix = crypto.randomUUID();
  const [row] = await sql<{ wallet_id: string }>(
    testEnv,
    `with d as (insert into developers (name, email) values ($1, $2) returning id)
     insert into wallets (kind, developer_id) select 'developer', id from d returning id as wallet_id`,
    [`Dev ${suffix}`, `${suffix}@example.test`],
  );
  await fund(database, row!.wallet_id, balance);
  const response = await admin('/v1/admin/payouts/run-mock', { threshold_usd: balance });
  const payout = ((await response.json()) as { data: Payout[] }).data.find((candidate) => candidate.wallet_id === row!.wallet_id);
  if (!payout) throw new Error('no payout created');
  return payout;
}

const admin = (path: string, json?: unknown) =>
  call(api(), testEnv, path, { method: 'POST', token: adminToken, ...(json === undefined ? {} : { json }) });
const cancel = (id: string, note = 'developer asked to hold payouts') => admin(`/v1/admin/payouts/${id}/cancel`, { operator_note: note });
const reject = (id: string, note = 'bank details failed review') => admin(`/v1/admin/payouts/${id}/reject`, { operator_note: note });
const approve = (id: string) => admin(`/v1/admin/payouts/${id}/approve`, { operator_note: 'checked' });
const available = async (walletId: string) => formatUsd((await getWalletBalance(database.db, walletId))!.availableUsd);
const holdOf = async (id: string) =>
  (await sql<{ status: string }>(testEnv, 'select status from balance_holds where request_id = $1', [`payout:${id}`]))[0]!.status;
const auditActions = async (id: string) =>
  (
    await sql<{ action: string }>(testEnv, `select action from audit_logs where target_type = 'payout' and target_id = $1 order by id`, [
      id,
    ])
  ).map((row) => row.action);

async function expectInvalidState(response: Response) {
  expect(response.status).toBe(409);
  expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_state');
}

describe('POST /v1/admin/payouts/{id}/cancel and /reject', () => {
  it.each([
    ['cancel', cancel, 'cancelled', 'developer asked to hold payouts'],
    ['reject', reject, 'rejected', 'bank details failed review'],
  ] as const)('%s: pending → %s, releasing the reservation, audited with the note', async (_action, close, status, note) => {
    const payout = await pendingPayout();
    expect(await available(payout.wallet_id)).toBe('0.00000000');
    const response = await close(payout.id);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Payout;
    expect(body).toMatchObject({ id: payout.id, status, operator_note: note });
    expect(body.closed_at).not.toBeNull();
    expect(await holdOf(payout.id)).toBe('released');
    expect(await available(payout.wallet_id)).toBe('120.00000000');
    expect(await auditActions(payout.id)).toEqual(['payout.created', `payout.${status}`]);
    // Idempotent: the same close again changes nothing and writes no second audit row.
    expect((await close(payout.id)).status).toBe(200);
    expect(await auditActions(payout.id)).toEqual(['payout.created', `payout.${status}`]);
    // The wallet can get a new payout afterwards.
    const rerun = await admin('/v1/admin/payouts/run-mock', { threshold_usd: '120.00000000' });
    expect(((await rerun.json()) as { data: Payout[] }).data.map((row) => row.wallet_id)).toContain(payout.wallet_id);
  });

  it('answers 409 invalid_state from processing, paid or the other closed state, and changes nothing', async () => {
    const processing = await pendingPayout();
    expect((await approve(processing.id)).status).toBe(200);
    await expectInvalidState(await cancel(processing.id));
    await expectInvalidState(await reject(processing.id));
    expect(await holdOf(processing.id)).toBe('active');
    expect((await admin(`/v1/admin/payouts/${processing.id}/mark-paid`)).status).toBe(200);
    await expectInvalidState(await cancel(processing.id));
    const cancelled = await pendingPayout();
    expect((await cancel(cancelled.id)).status).toBe(200);
    await expectInvalidState(await reject(cancelled.id));
    await expectInvalidState(await approve(cancelled.id));
    const [row] = await sql<{ status: string }>(testEnv, 'select status from payouts where id = $1', [cancelled.id]);
    expect(row!.status).toBe('cancelled');
  });

  it('racing cancel, reject and approve: exactly one takes effect', async () => {
    for (let round = 0; round < 4; round++) {
      const payout = await pendingPayout();
      const results = await Promise.all([cancel(payout.id), approve(payout.id), reject(payout.id), cancel(payout.id), approve(payout.id)]);
      const [row] = await sql<{ status: string }>(testEnv, 'select status from payouts where id = $1', [payout.id]);
      const transitions = (await auditActions(payout.id)).filter((action) => action !== 'payout.created');
      expect(transitions).toHaveLength(1);
      expect(transitions[0]).toBe(`payout.${row!.status === 'processing' ? 'approved' : row!.status}`);
      expect(await holdOf(payout.id)).toBe(row!.status === 'processing' ? 'active' : 'released');
      for (const result of results) expect([200, 409]).toContain(result.status);
    }
  });

  it('answers 404 for an unknown payout and 400 without a note', async () => {
    expect((await cancel(crypto.randomUUID())).status).toBe(404);
    expect((await reject('not-a-uuid')).status).toBe(404);
    const payout = await pendingPayout();
    expect((await admin(`/v1/admin/payouts/${payout.id}/cancel`, {})).status).toBe(400);
    expect((await admin(`/v1/admin/payouts/${payout.id}/reject`, { operator_note: '  ' })).status).toBe(400);
  });
});
