import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const credit = (env: TestEnv, walletId: string, json: unknown, token = adminToken) =>
  call(api(), env, `/v1/admin/wallets/${walletId}/credit-test-balance`, { json, token });

describe('POST /v1/admin/wallets/{id}/credit-test-balance', () => {
  it('credits test money as a top-up from payment clearing', async () => {
    const { walletId } = await createSession(testEnv);
    const response = await credit(testEnv, walletId, { amount_usd: '25.00000000' });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { transaction_id: string; amount_usd: string; balance_usd: string };
    expect(body).toMatchObject({ wallet_id: walletId, amount_usd: '25.00000000', balance_usd: '25.00000000' });
    const [transaction] = await sql<{ kind: string; metadata: { test: boolean } }>(
      testEnv,
      'select kind, metadata from ledger_transactions where id = $1',
      [body.transaction_id],
    );
    expect(transaction).toEqual({ kind: 'top_up', metadata: { test: true } });
  });

  it('credits a developer wallet too', async () => {
    const { developer_wallet_id: walletId } = await demoFixture(testEnv);
    const response = await credit(testEnv, walletId, { amount_usd: '1.00000000', reason: 'payout rehearsal' });
    expect(response.status).toBe(201);
  });

  it('is refused outside development and test configurations', async () => {
    const production = await createTestEnv({ ENVIRONMENT: 'production' });
    const { walletId } = await createSession(production);
    const response = await credit(production, walletId, { amount_usd: '1.00000000' });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    const [row] = await sql<{ balance: string }>(production, 'select balance::text from wallets where id = $1', [walletId]);
    expect(row!.balance).toBe('0.00000000');
  });

  it('refuses a wrong admin token with 401', async () => {
    const { walletId } = await createSession(testEnv);
    const response = await credit(testEnv, walletId, { amount_usd: '1.00000000' }, 'wrong-token-wrong-token');
    expect(response.status).toBe(401);
  });

  it.each([
    ['a JSON number', { amount_usd: 5 }],
    ['zero', { amount_usd: '0.00000000' }],
    ['more than 10000 USD', { amount_usd: '10000.00000001' }],
    ['an unknown field', { amount_usd: '1.00000000', extra: true }],
  ])('refuses %s with 400', async (_label, body) => {
    const { walletId } = await createSession(testEnv);
    expect((await credit(testEnv, walletId, body)).status).toBe(400);
  });

  it('answers 404 for a wallet that does not exist', async () => {
    expect((await credit(testEnv, crypto.randomUUID(), { amount_usd: '1.00000000' })).status).toBe(404);
  });
});
