/** `npm start`'s offline checkout: the local stack's fake Stripe page pays and delivers the webhook. */
import pg from 'pg';
import { expect, inject, it } from 'vitest';

const stack = inject('stack');

it('completes a checkout offline: API → fake Stripe → hosted page "Pay" → signed webhook → wallet credited', async () => {
  const session = await fetch(`${stack.apiUrl}/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
    body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `offline-${crypto.randomUUID()}` }),
  });
  const { session_token: token } = (await session.json()) as { session_token: string };
  const created = await fetch(`${stack.apiUrl}/v1/user/stripe/checkout-sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ amount_usd: '15.00000000' }),
  });
  expect(created.status).toBe(201);
  const checkout = (await created.json()) as { checkout_session_id: string; url: string };
  expect(new URL(checkout.url).hostname).toBe('127.0.0.1');

  const paid = await fetch(checkout.url, { method: 'POST', redirect: 'manual' });
  expect(paid.status).toBe(303);
  expect(paid.headers.get('location')).toBe(`${stack.apiUrl}/?checkout=success`);

  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select w.balance::text as balance, c.status from checkout_sessions c join wallets w on w.id = c.wallet_id where c.stripe_session_id = $1`,
      [checkout.checkout_session_id],
    );
    expect(rows).toEqual([{ balance: '15.00000000', status: 'completed' }]);
  } finally {
    await client.end();
  }
});
