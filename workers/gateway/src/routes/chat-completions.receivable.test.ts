import { beforeAll, describe, expect, it } from 'vitest';
import { adjustWallet } from '#shared/ledger/adjust-wallet.ts';
import { createDatabase } from '#shared/db.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import type { TestEnv } from '../../../test/harness.ts';
import { fakeUpstream } from '../../../test/fake-upstream.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { unitsOf } from '../../../test/wallet-kit.ts';
import { disputeEvent, randomStripeId } from '../../../../scripts/lib/stripe-events.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fund,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const hello = { model: 'mock:echo', feature: 'chat', messages: [userMessage('hello')], max_tokens: 10 };

/**
 * A wallet below zero the only way one gets there: a top-up of 3 USD, 2 USD of it spent (an operator
 * debit stands in for the calls), then the bank takes the 3 USD back (a dispute: a chargeback). The
 * user owes 2 USD, a receivable.
 */
async function walletOwingTwoUsd() {
  const checkout = await paidCheckout(testEnv, '3.00000000');
  const { db, pool } = createDatabase(testEnv);
  try {
    await adjustWallet(db, {
      walletId: checkout.walletId,
      kind: 'adjustment',
      direction: 'debit',
      amount: parseWireAmount('2.00000000'),
      reason: 'spent',
      requestId: newRequestId(),
    });
  } finally {
    await pool.end();
  }
  const dispute = {
    id: randomStripeId('dp'),
    charge: checkout.chargeId,
    payment_intent: checkout.paymentIntentId,
    amount: checkout.amountCents,
  };
  expect((await deliver(testEnv, disputeEvent(dispute))).body.outcome).toBe('chargeback_booked');
  return checkout;
}

describe('a wallet below zero (a receivable from a chargeback)', () => {
  it('is refused for platform calls with 402 insufficient_balance until a top-up covers what it owes', async () => {
    const session = await walletOwingTwoUsd();
    expect((await wallet(testEnv, session.walletId)).balance).toBe('-2.00000000');

    const upstream = fakeUpstream(() => {
      throw new Error('the upstream must not be called');
    });
    const requestId = newRequestId();
    const refused = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, hello, requestId);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);

    // A top-up pays the receivable first: 1.5 USD leaves the wallet at −0.5, still refused.
    await fund(testEnv, session.walletId, '1.50000000');
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(402);
    await fund(testEnv, session.walletId, '1.50000000');
    expect((await wallet(testEnv, session.walletId)).balance).toBe('1.00000000');
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(200);
    await settled(testEnv);
    expect(unitsOf((await wallet(testEnv, session.walletId)).balance)).toBeLessThan(unitsOf('1.00000000'));
  });
});
