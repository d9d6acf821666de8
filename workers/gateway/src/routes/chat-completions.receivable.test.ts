import { beforeAll, describe, expect, it } from 'vitest';
import { adjustWallet } from '#shared/ledger/adjust-wallet.ts';
import { createDatabase } from '#shared/db.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import { createTestEnv, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream } from '../../../test/fake-upstream.ts';
import { chat, fund, fundedSession, gatewayWith, holdStatus, newRequestId, userMessage, wallet } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const hello = { model: 'mock:echo', feature: 'chat', messages: [userMessage('hello')], max_tokens: 10 };

/** A chargeback of more than the wallet holds (the user spent the money): the wallet goes below zero. */
async function chargeBack(walletId: string, amount: string) {
  const { db, pool } = createDatabase(testEnv);
  try {
    await adjustWallet(db, {
      walletId,
      kind: 'chargeback',
      direction: 'debit',
      amount: parseWireAmount(amount),
      reason: 'bank chargeback',
      requestId: newRequestId(),
    });
  } finally {
    await pool.end();
  }
}

describe('a wallet below zero (a receivable from a chargeback)', () => {
  it('is refused for platform calls with 402 insufficient_balance until a top-up covers what it owes', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    await chargeBack(session.walletId, '3.00000000');
    expect((await wallet(testEnv, session.walletId)).balance).toBe('-2.00000000');

    const upstream = fakeUpstream(() => {
      throw new Error('the upstream must not be called');
    });
    const requestId = newRequestId();
    const refused = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, hello, requestId);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    expect(upstream.requests).toEqual([]);
    expect(await holdStatus(testEnv, requestId)).toBeUndefined();

    // A top-up pays the receivable first: 1.5 USD leaves the wallet at −0.5, still refused.
    await fund(testEnv, session.walletId, '1.50000000');
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(402);
    await fund(testEnv, session.walletId, '1.50000000');
    expect((await wallet(testEnv, session.walletId)).balance).toBe('1.00000000');
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(200);
  });
});
