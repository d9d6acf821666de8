import Stripe from 'stripe';
import { beforeAll, describe, expect, it } from 'vitest';
import { completedEvent, createPendingCheckout, deliver } from '../../../test/payments-kit.ts';
import { api, call, createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

/** The test's own stripe client against the same fake, to look at what the API created there. */
const stripe = () =>
  new Stripe(testEnv.STRIPE_SECRET_KEY as string, {
    httpClient: Stripe.createFetchHttpClient(),
    host: testEnv.STRIPE_API_HOST as string,
    port: Number(testEnv.STRIPE_API_PORT),
    protocol: 'http',
  });

const checkout = (testEnvironment: TestEnv, token: string, json: unknown) =>
  call(api(), testEnvironment, '/v1/user/stripe/checkout-sessions', { token, json });
const checkoutRows = async (walletId: string) =>
  sql<{ stripe_session_id: string; amount_cents: number; status: string }>(
    testEnv,
    'select stripe_session_id, amount_cents, status from checkout_sessions where wallet_id = $1',
    [walletId],
  );

describe('POST /v1/user/stripe/checkout-sessions', () => {
  it('creates a Stripe Checkout Session over HTTP and a pending session linked to the wallet', async () => {
    const created = await createPendingCheckout(testEnv, '25.50000000');
    expect(created.stripeSessionId).toMatch(/^cs_test_/);
    expect(created.amountCents).toBe(2550);
    expect(await checkoutRows(created.walletId)).toEqual([
      { stripe_session_id: created.stripeSessionId, amount_cents: 2550, status: 'pending' },
    ]);

    const remote = await stripe().checkout.sessions.retrieve(created.stripeSessionId);
    expect(remote).toMatchObject({
      amount_total: 2550,
      currency: 'usd',
      mode: 'payment',
      client_reference_id: created.walletId,
      success_url: 'https://app.example.test/billing?checkout=success',
      cancel_url: 'https://app.example.test/billing?checkout=cancelled',
    });
    expect(created.url).toBe(remote.url);
  });

  it('answers with the documented shape', async () => {
    const session = await createSession(testEnv);
    const response = await checkout(testEnv, session.token, { amount_usd: '1.00000000', return_url: 'http://localhost:3000/' });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({
      amount_usd: '1.00000000',
      amount_cents: 100,
      currency: 'USD',
      status: 'pending',
      checkout_session_id: expect.stringMatching(/^cs_test_/),
      url: expect.stringContaining('/c/pay/cs_test_'),
    });
  });

  it('refuses amounts outside 1.00–1000.00 USD, fractions of a cent and non-string amounts, creating nothing', async () => {
    const session = await createSession(testEnv);
    for (const amount of ['0.99000000', '1000.01000000', '10.00500000', '0.00000000', 10, '10', '-5.00000000']) {
      const response = await checkout(testEnv, session.token, { amount_usd: amount });
      expect(response.status, String(amount)).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    expect((await checkout(testEnv, session.token, { amount_usd: '5.00000000', return_url: 'javascript:alert(1)' })).status).toBe(400);
    expect((await checkout(testEnv, session.token, { amount_usd: '5.00000000', extra: true })).status).toBe(400);
    expect(await checkoutRows(session.walletId)).toEqual([]);
    expect((await checkout(testEnv, session.token, { amount_usd: '1000.00000000', return_url: 'https://app.example.test/' })).status).toBe(
      201,
    );
  });

  it('needs a return URL when the deployment configures none (CHECKOUT_RETURN_URL, API_BASE_URL)', async () => {
    const session = await createSession(testEnv);
    expect((await checkout(testEnv, session.token, { amount_usd: '5.00000000' })).status).toBe(400);
    const configured = { ...testEnv, CHECKOUT_RETURN_URL: 'https://shop.example.test/wallet' };
    const response = await checkout(configured, session.token, { amount_usd: '5.00000000' });
    expect(response.status).toBe(201);
    const { checkout_session_id: id } = (await response.json()) as { checkout_session_id: string };
    expect((await stripe().checkout.sessions.retrieve(id)).success_url).toBe('https://shop.example.test/wallet?checkout=success');
  });

  it('needs a session', async () => {
    const response = await call(api(), testEnv, '/v1/user/stripe/checkout-sessions', { json: { amount_usd: '5.00000000' } });
    expect(response.status).toBe(401);
  });

  it('refuses a live secret key unless production allows it, before calling Stripe', async () => {
    const liveEnv = { ...testEnv, STRIPE_SECRET_KEY: 'sk_live_should_never_be_used' };
    const session = await createSession(testEnv);
    const body = { amount_usd: '5.00000000', return_url: 'https://app.example.test/' };
    const refused = await checkout(liveEnv, session.token, body);
    expect(refused.status).toBe(403);
    const text = await refused.text();
    expect(text).not.toContain('sk_live');
    expect(await checkoutRows(session.walletId)).toEqual([]);

    // Allowed in production: the key reaches Stripe (the fake, which accepts test keys only, refuses it → 502).
    const allowed = await checkout({ ...liveEnv, ENVIRONMENT: 'production', STRIPE_ALLOW_LIVE_KEYS: '1' }, session.token, body);
    expect(allowed.status).toBe(502);
    expect(((await allowed.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    // The flag alone outside production does not unlock live mode.
    expect((await checkout({ ...liveEnv, STRIPE_ALLOW_LIVE_KEYS: '1' }, session.token, body)).status).toBe(403);
  });

  it('returns the same checkout session when a request is retried with the same request id', async () => {
    const session = await createSession(testEnv);
    const send = () =>
      call(api(), testEnv, '/v1/user/stripe/checkout-sessions', {
        token: session.token,
        json: { amount_usd: '8.00000000', return_url: 'https://app.example.test/' },
        headers: { 'x-request-id': `retry-${session.walletId}` },
      });
    const first = (await (await send()).json()) as { checkout_session_id: string };
    const second = (await (await send()).json()) as { checkout_session_id: string };
    expect(second.checkout_session_id).toBe(first.checkout_session_id);
    expect(await checkoutRows(session.walletId)).toHaveLength(1);
  });
});

describe('GET /v1/user/stripe/checkout-sessions/{id}', () => {
  const status = (token: string | undefined, id: string) =>
    call(api(), testEnv, `/v1/user/stripe/checkout-sessions/${encodeURIComponent(id)}`, { token });

  it('is pending until the webhook credits the wallet, then completed with the credited amount', async () => {
    const created = await createPendingCheckout(testEnv, '12.34000000');
    const pending = await status(created.token, created.stripeSessionId);
    expect(pending.status).toBe(200);
    expect(await pending.json()).toMatchObject({
      checkout_session_id: created.stripeSessionId,
      amount_usd: '12.34000000',
      amount_cents: 1234,
      currency: 'USD',
      status: 'pending',
      completed_at: null,
    });
    expect((await deliver(testEnv, completedEvent(created.stripeSessionId, 1234))).body.credited).toBe(true);
    const completed = (await (await status(created.token, created.stripeSessionId)).json()) as { status: string; completed_at: string };
    expect(completed.status).toBe('completed');
    expect(Date.parse(completed.completed_at)).not.toBeNaN();
  });

  it("answers 404 for another wallet's checkout and for an unknown id, 401 without a session", async () => {
    const created = await createPendingCheckout(testEnv, '2.00000000');
    const stranger = await createSession(testEnv);
    const foreign = await status(stranger.token, created.stripeSessionId);
    expect(foreign.status).toBe(404);
    const body = (await foreign.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe('not_found');
    expect(JSON.stringify(body)).not.toContain('2.00');
    expect((await status(created.token, 'cs_test_unknown')).status).toBe(404);
    expect((await status(undefined, created.stripeSessionId)).status).toBe(401);
  });
});
