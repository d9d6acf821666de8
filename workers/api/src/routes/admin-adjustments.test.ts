import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const adjust = (walletId: string, json: unknown, token = adminToken) =>
  call(api(), testEnv, `/v1/admin/wallets/${walletId}/adjustments`, { json, token });

const balanceOf = async (walletId: string) =>
  (await sql<{ balance: string }>(testEnv, 'select balance::text as balance from wallets where id = $1', [walletId]))[0]!.balance;

describe('POST /v1/admin/wallets/{wallet_id}/adjustments', () => {
  it('refuses a missing or wrong admin token with 401', async () => {
    const { walletId } = await createSession(testEnv);
    const body = { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'goodwill' };
    for (const token of [undefined, 'not-the-admin-token', `${adminToken}x`]) {
      const response = await call(api(), testEnv, `/v1/admin/wallets/${walletId}/adjustments`, { json: body, token });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    expect(await balanceOf(walletId)).toBe('0.00000000');
  });

  it('credits a wallet with a balanced transaction against the adjustments account', async () => {
    const { walletId } = await createSession(testEnv);
    const response = await adjust(walletId, { kind: 'adjustment', direction: 'credit', amount_usd: '2.50000000', reason: 'goodwill' });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { transaction_id: string; amount_usd: string; direction: string; wallet_id: string };
    expect(body).toMatchObject({ wallet_id: walletId, amount_usd: '2.50000000', direction: 'credit' });
    expect(await balanceOf(walletId)).toBe('2.50000000');
    const entries = await sql<{ kind: string; amount: string }>(
      testEnv,
      `select w.kind, e.amount::text as amount from ledger_entries e join wallets w on w.id = e.wallet_id
        where e.transaction_id = $1 order by e.amount`,
      [body.transaction_id],
    );
    expect(entries).toEqual([
      { kind: 'platform_adjustments', amount: '-2.50000000' },
      { kind: 'user', amount: '2.50000000' },
    ]);
    const [audit] = await sql<{ action: string }>(testEnv, 'select action from audit_logs where target_id = $1', [walletId]);
    expect(audit!.action).toBe('wallet.adjustment');
  });

  it('replays the first result for the same idempotency key and body, and moves money once', async () => {
    const { walletId } = await createSession(testEnv);
    const body = { kind: 'refund', direction: 'credit', amount_usd: '1.00000000', reason: 'bad answer', idempotency_key: 'refund-42' };
    const first = await adjust(walletId, body);
    const second = await adjust(walletId, body);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(await first.json());
    expect(await balanceOf(walletId)).toBe('1.00000000');
  });

  it('answers 409 conflict when the idempotency key comes back with a different body', async () => {
    const { walletId } = await createSession(testEnv);
    const body = { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'first', idempotency_key: 'key-1' };
    expect((await adjust(walletId, body)).status).toBe(201);
    const response = await adjust(walletId, { ...body, amount_usd: '2.00000000' });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('conflict');
    expect(await balanceOf(walletId)).toBe('1.00000000');
  });

  it('refuses a debit beyond the balance with 402 insufficient_balance', async () => {
    const { walletId } = await createSession(testEnv);
    await adjust(walletId, { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'seed' });
    // (A chargeback is the exception: it is booked below zero, admin-adjustments.chargeback.test.ts.)
    const response = await adjust(walletId, { kind: 'refund', direction: 'debit', amount_usd: '1.00000001', reason: 'refund' });
    expect(response.status).toBe(402);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    expect(await balanceOf(walletId)).toBe('1.00000000');
    const exact = await adjust(walletId, { kind: 'refund', direction: 'debit', amount_usd: '1.00000000', reason: 'refund' });
    expect(exact.status).toBe(201);
    expect(await balanceOf(walletId)).toBe('0.00000000');
  });

  it.each([
    ['a JSON number amount', { amount_usd: 1 }],
    ['an amount with 9 digits', { amount_usd: '1.000000001' }],
    ['an exponent', { amount_usd: '1e2' }],
    ['a negative amount', { amount_usd: '-1.00000000' }],
    ['a zero amount', { amount_usd: '0.00000000' }],
    ['an unknown kind', { kind: 'gift' }],
    ['an unknown direction', { direction: 'sideways' }],
    ['an empty reason', { reason: '  ' }],
    ['an unknown field', { note: 'x' }],
  ])('refuses %s with 400', async (_label, change) => {
    const { walletId } = await createSession(testEnv);
    const body = { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'r', ...change };
    const response = await adjust(walletId, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it('answers 404 for an unknown, malformed or system wallet', async () => {
    const [system] = await sql<{ id: string }>(testEnv, "select id from wallets where kind = 'platform_revenue'");
    for (const walletId of [crypto.randomUUID(), 'not-a-uuid', system!.id]) {
      const response = await adjust(walletId, { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'r' });
      expect(response.status).toBe(404);
    }
  });
});
