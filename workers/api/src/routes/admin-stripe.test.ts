import { beforeAll, describe, expect, it } from 'vitest';
import { completedEvent, createPendingCheckout, deliver, paymentState } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createSession, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

interface ReplayAnswer {
  checkout_session_id: string;
  stripe_status: string | null;
  payment_status: string;
  amount_cents: number | null;
  credited: boolean;
  outcome: string;
  event_id: string | null;
}
interface EventList {
  data: { event_id: string; type: string; source: string; received_at: string }[];
}

const replayAs = (token: string | undefined, id: string) =>
  call(api(), testEnv, `/v1/admin/stripe/checkout-sessions/${encodeURIComponent(id)}/replay`, { method: 'POST', token });
const replay = (id: string) => replayAs(adminToken, id);
const events = async (query = '') => {
  const response = await call(api(), testEnv, `/v1/admin/stripe/webhook-events${query}`, { token: adminToken });
  expect(response.status).toBe(200);
  return (await response.json()) as EventList;
};
/** The buyer pays on the fake's hosted page; the Workers tests' fake has no webhook: the delivery is lost. */
const payWithoutWebhook = async (url: string) => {
  const response = await fetch(url, { method: 'POST', redirect: 'manual' });
  await response.arrayBuffer();
  expect(response.status).toBe(303);
};
const balance = async (walletId: string) =>
  (await sql<{ balance: string }>(testEnv, 'select balance::text as balance from wallets where id = $1', [walletId]))[0]!.balance;

describe('POST /v1/admin/stripe/checkout-sessions/{id}/replay', () => {
  it('credits a paid checkout whose webhook never arrived, from what Stripe says, once', async () => {
    const checkout = await createPendingCheckout(testEnv, '7.25000000');
    await payWithoutWebhook(checkout.url);
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ status: 'pending', top_ups: 0 });

    const first = await replay(checkout.stripeSessionId);
    expect(first.status).toBe(200);
    const answer = (await first.json()) as ReplayAnswer;
    expect(answer).toMatchObject({
      checkout_session_id: checkout.stripeSessionId,
      stripe_status: 'complete',
      payment_status: 'paid',
      amount_cents: 725,
      credited: true,
      outcome: 'credited',
      event_id: expect.stringMatching(/^evt_replay_[0-9a-f]{32}$/),
    });
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ status: 'completed', top_ups: 1 });
    expect(await balance(checkout.walletId)).toBe('7.25000000');

    // Again (or the late webhook): acknowledged, nothing more credited.
    const again = (await (await replay(checkout.stripeSessionId)).json()) as ReplayAnswer;
    expect(again).toMatchObject({ credited: false, outcome: 'already_completed' });
    const late = await deliver(testEnv, completedEvent(checkout.stripeSessionId, 725));
    expect(late.body.credited).toBe(false);
    expect(await balance(checkout.walletId)).toBe('7.25000000');
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ top_ups: 1 });

    const listed = (await events('?limit=200')).data.find((event) => event.event_id === answer.event_id);
    expect(listed).toMatchObject({ type: 'checkout.session.completed', source: 'replay' });
  });

  it('credits nothing for a checkout not paid yet, and records no event', async () => {
    const checkout = await createPendingCheckout(testEnv, '3.00000000');
    const answer = (await (await replay(checkout.stripeSessionId)).json()) as ReplayAnswer;
    expect(answer).toMatchObject({
      stripe_status: 'open',
      payment_status: 'unpaid',
      credited: false,
      outcome: 'payment_not_completed',
      event_id: null,
    });
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ status: 'pending', top_ups: 0 });
    expect(await balance(checkout.walletId)).toBe('0.00000000');
  });

  it('answers 404 for a session Stripe does not know, 400 for a malformed id, 401 without the admin token', async () => {
    const unknown = await replay('cs_test_no_such_session');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    for (const bad of ['not-a-session', 'cs_', "cs_test'; drop table wallets;--"]) {
      const response = await replay(bad);
      expect(response.status, bad).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    const checkout = await createPendingCheckout(testEnv, '2.00000000');
    await payWithoutWebhook(checkout.url);
    const session = await createSession(testEnv);
    for (const token of [undefined, developerKey, session.token, `${adminToken}x`]) {
      expect((await replayAs(token, checkout.stripeSessionId)).status).toBe(401);
    }
    expect(await paymentState(testEnv, checkout.walletId, checkout.stripeSessionId)).toMatchObject({ status: 'pending', top_ups: 0 });
  });
});

describe('GET /v1/admin/stripe/webhook-events', () => {
  it('lists processed events newest first, telling Stripe deliveries from replays; honours limit', async () => {
    const checkout = await createPendingCheckout(testEnv, '4.00000000');
    const event = completedEvent(checkout.stripeSessionId, 400) as { id: string };
    expect((await deliver(testEnv, event)).body.credited).toBe(true);
    const { data } = await events();
    expect(data[0]).toMatchObject({ event_id: event.id, type: 'checkout.session.completed', source: 'stripe' });
    const times = data.map((row) => Date.parse(row.received_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect((await events('?limit=1')).data).toHaveLength(1);
  });

  it('refuses a bad limit with 400 and anyone but the operator with 401', async () => {
    for (const limit of ['0', '201', 'x']) {
      const response = await call(api(), testEnv, `/v1/admin/stripe/webhook-events?limit=${limit}`, { token: adminToken });
      expect(response.status, limit).toBe(400);
    }
    expect((await call(api(), testEnv, '/v1/admin/stripe/webhook-events', { token: developerKey })).status).toBe(401);
    expect((await call(api(), testEnv, '/v1/admin/stripe/webhook-events')).status).toBe(401);
  });
});
