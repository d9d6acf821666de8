import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('GET /v1/user/wallet', () => {
  it('refuses a request without a valid session with 401', async () => {
    expect((await call(api(), testEnv, '/v1/user/wallet')).status).toBe(401);
    expect((await call(api(), testEnv, '/v1/user/wallet', { token: `fvs_${'x'.repeat(43)}` })).status).toBe(401);
    expect((await call(api(), testEnv, '/v1/user/wallet', { token: adminToken })).status).toBe(401);
  });

  it("shows the session user's balance, what active holds keep, and what is available", async () => {
    const session = await createSession(testEnv);
    await call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/credit-test-balance`, {
      json: { amount_usd: '3.00000000' },
      token: adminToken,
    });
    await sql(
      testEnv,
      `insert into balance_holds (wallet_id, request_id, amount, expires_at) values
         ($1, 'wallet-hold-active', 1.25, now() + interval '5 minutes'),
         ($1, 'wallet-hold-expired', 1.00, now() - interval '1 second')`,
      [session.walletId],
    );
    const response = await call(api(), testEnv, '/v1/user/wallet', { token: session.token });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      wallet_id: session.walletId,
      currency: 'USD',
      balance_usd: '3.00000000',
      held_usd: '1.25000000',
      available_usd: '1.75000000',
    });
  });
});
