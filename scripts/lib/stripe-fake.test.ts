import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeStripeForm } from './stripe-form.ts';
import { startStripeFake, type StripeFake } from './stripe-fake.ts';

let fake: StripeFake;
let stripe: Stripe;
beforeAll(async () => {
  fake = await startStripeFake();
  stripe = new Stripe('sk_test_fake_key', {
    httpClient: Stripe.createFetchHttpClient(),
    host: '127.0.0.1',
    port: fake.port,
    protocol: 'http',
    maxNetworkRetries: 0,
  });
});
afterAll(() => fake.close());

const params: Stripe.Checkout.SessionCreateParams = {
  mode: 'payment',
  line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 2500, product_data: { name: 'Top-up' } } }],
  success_url: 'https://example.test/done',
  cancel_url: 'https://example.test/cancel',
  client_reference_id: 'wallet-1',
  metadata: { wallet_id: 'wallet-1' },
};

describe('fake Stripe API through the stripe package', () => {
  it('creates and retrieves a checkout session in Stripe shapes', async () => {
    const created = await stripe.checkout.sessions.create(params);
    expect(created).toMatchObject({
      object: 'checkout.session',
      amount_total: 2500,
      currency: 'usd',
      status: 'open',
      payment_status: 'unpaid',
      client_reference_id: 'wallet-1',
      metadata: { wallet_id: 'wallet-1' },
    });
    expect(created.id).toMatch(/^cs_test_/);
    expect(created.url).toBe(`${fake.url}/c/pay/${created.id}`);
    const retrieved = await stripe.checkout.sessions.retrieve(created.id);
    expect(retrieved.id).toBe(created.id);
  });

  it('replays a create with the same idempotency key', async () => {
    const first = await stripe.checkout.sessions.create(params, { idempotencyKey: 'same-key' });
    const second = await stripe.checkout.sessions.create(params, { idempotencyKey: 'same-key' });
    expect(second.id).toBe(first.id);
  });

  it('answers Stripe errors the package turns into typed exceptions', async () => {
    await expect(stripe.checkout.sessions.retrieve('cs_test_missing')).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      statusCode: 404,
      code: 'resource_missing',
    });
    const live = new Stripe('sk_live_nope', {
      httpClient: Stripe.createFetchHttpClient(),
      host: '127.0.0.1',
      port: fake.port,
      protocol: 'http',
    });
    await expect(live.checkout.sessions.create(params)).rejects.toMatchObject({ statusCode: 401 });
    await expect(stripe.checkout.sessions.create({ ...params, line_items: [] })).rejects.toMatchObject({ statusCode: 400 });
  });

  it('serves a hosted page whose Pay button completes the session', async () => {
    const session = await stripe.checkout.sessions.create(params);
    const page = await fetch(session.url!);
    expect(await page.text()).toContain('25.00 USD');
    const paid = await fetch(session.url!, { method: 'POST', redirect: 'manual' });
    expect(paid.status).toBe(303);
    expect(paid.headers.get('location')).toBe('https://example.test/done');
    expect((await stripe.checkout.sessions.retrieve(session.id)).payment_status).toBe('paid');
  });
});

describe('decodeStripeForm', () => {
  it('rebuilds nested objects and indexed arrays', () => {
    expect(decodeStripeForm('a=1&line_items[0][price_data][currency]=usd&line_items[1][quantity]=2&metadata[k]=v%20w')).toEqual({
      a: '1',
      line_items: [{ price_data: { currency: 'usd' } }, { quantity: '2' }],
      metadata: { k: 'v w' },
    });
  });
});
