/**
 * PostgreSQL unreachable: a dependency's failure, not the server's (DESIGN §4). Every route that
 * needs the database answers 503 `unavailable` with `retry-after` in the envelope — never a 500, never
 * the driver's words; a call its wallet's lease covers is still served. A query the database ran and
 * refused stays what it was. "Unreachable" here is the test's own database at a port nothing listens
 * on (the proxy's TCP connection refused, as when the server is stopped), or the WebSocket proxy itself
 * at such a port.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminToken,
  api,
  call,
  createSession,
  createTestEnv,
  demoPublicAppId,
  developerKey,
  gateway,
  sql,
  type TestEnv,
} from '../../test/harness.ts';
import { signStripePayload } from '../../../scripts/lib/stripe-events.ts';
import { chat, fundedSession, gatewayWith } from '../../test/gateway-kit.ts';
import { completedEvent, createPendingCheckout } from '../../test/payments-kit.ts';
import { answeringUpstream, authorizeOnly, expectBooksAgree, leasedTestEnv, platformCall, walletObjectOf } from '../../test/wallet-kit.ts';
import { databaseRetryAfterSeconds } from '../database-unreachable.ts';

/** Nothing listens on port 1 of the loopback interface: a connection there is refused at once. */
const closedPort = '127.0.0.1:1';

/** The same env with its database at a closed port: the proxy is up, PostgreSQL is not. */
const databaseDown = (testEnv: TestEnv): TestEnv => ({
  ...testEnv,
  DATABASE_URL: testEnv.DATABASE_URL.replace(/@[^/]+\//, `@${closedPort}/`),
});

type Envelope = { error: { code: string; message: string; request_id: string } };

/** The answer is 503 `unavailable` in the envelope, with retry-after, and says nothing of the driver. */
async function expectUnavailable(response: Response) {
  const text = await response.text();
  expect({ status: response.status, body: text }).toMatchObject({ status: 503 });
  expect(response.headers.get('retry-after')).toBe(String(databaseRetryAfterSeconds));
  const { error } = JSON.parse(text) as Envelope;
  expect(error).toEqual({
    code: 'unavailable',
    message: 'The database is unreachable; retry after a few seconds.',
    request_id: response.headers.get('x-request-id'),
  });
  expect(text).not.toMatch(/ECONNREFUSED|Connection terminated|Failed query|127\.0\.0\.1|postgres/i);
}

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('with the database unreachable, every route that needs it answers 503 unavailable', () => {
  it('POST /v1/sessions, also when the WebSocket proxy itself is down', async () => {
    const json = { public_app_id: demoPublicAppId, external_user_id: `user-${crypto.randomUUID()}` };
    const mint = (env: TestEnv) => call(api(), env, '/v1/sessions', { json, token: developerKey });
    await expectUnavailable(await mint({ ...testEnv, DATABASE_WS_PROXY: closedPort }));
    await expectUnavailable(await mint(databaseDown(testEnv)));
    // Control: the same request with the database there.
    expect((await mint(testEnv)).status).toBe(201);
  });

  it('POST /v1/user/stripe/checkout-sessions', async () => {
    const session = await createSession(testEnv);
    const response = await call(api(), databaseDown(testEnv), '/v1/user/stripe/checkout-sessions', {
      token: session.token,
      json: { amount_usd: '10.00000000', return_url: 'https://app.example.test/billing' },
    });
    await expectUnavailable(response);
  });

  it('POST /v1/webhooks/stripe: Stripe delivers it again, and the redelivery credits once', async () => {
    const checkout = await createPendingCheckout(testEnv, '10.00000000');
    const payload = JSON.stringify(completedEvent(checkout.stripeSessionId, checkout.amountCents));
    const deliver = async (env: TestEnv) =>
      call(api(), env, '/v1/webhooks/stripe', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'stripe-signature': await signStripePayload(payload, env.STRIPE_WEBHOOK_SECRET as string),
        },
        body: payload,
      });
    await expectUnavailable(await deliver(databaseDown(testEnv)));
    const redelivered = await deliver(testEnv);
    expect(redelivered.status).toBe(200);
    expect(await redelivered.json()).toMatchObject({ credited: true });
  });

  it('POST /v1/admin/wallets/{id}/adjustments (credit and debit)', async () => {
    const session = await createSession(testEnv);
    for (const direction of ['credit', 'debit']) {
      const response = await call(api(), databaseDown(testEnv), `/v1/admin/wallets/${session.walletId}/adjustments`, {
        token: adminToken,
        json: { kind: 'adjustment', direction, amount_usd: '1.00000000', reason: 'outage test', idempotency_key: `outage-${direction}` },
      });
      await expectUnavailable(response);
    }
    // Nothing was booked: the same request (same idempotency key) posts once the database is back.
    const [row] = await sql<{ n: string }>(testEnv, `select count(*) as n from ledger_transactions where reason = 'outage test'`);
    expect(row?.n).toBe('0');
  });

  it('POST /v1/admin/payouts/run-mock', async () => {
    const response = await call(api(), databaseDown(testEnv), '/v1/admin/payouts/run-mock', {
      token: adminToken,
      json: { threshold_usd: '1.00000000' },
    });
    await expectUnavailable(response);
  });

  it('a gateway call of a cold wallet object (no lease yet)', async () => {
    const session = await createSession(testEnv);
    const response = await chat(gateway(), databaseDown(testEnv), session.token, {
      model: 'mock:echo',
      feature: 'chat',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await expectUnavailable(response);
  });
});

describe('wallet objects with the database unreachable', () => {
  let leasedEnv: TestEnv;
  beforeAll(async () => {
    leasedEnv = await leasedTestEnv();
  });

  it('a cold wallet object cannot open its lease: 503 unavailable, nothing reserved', async () => {
    const session = await fundedSession(leasedEnv, '1.00000000');
    const fake = answeringUpstream();
    const response = await chat(gatewayWith({ upstreamFetch: fake.fetch }), databaseDown(leasedEnv), session.token, platformCall);
    await expectUnavailable(response);
    expect(fake.requests).toHaveLength(0);
    // The object answers it as an outcome (an error's cause need not survive the RPC), not as a failure.
    const id = crypto.randomUUID();
    expect(await authorizeOnly(databaseDown(leasedEnv), session.token, { id, clientRequestId: `req_${id}` })).toEqual({
      outcome: 'unavailable',
    });
    const snapshot = await walletObjectOf(session.token).snapshot();
    expect({ inFlight: snapshot.inFlight, unflushed: snapshot.unflushed, committedUsd: snapshot.committedUsd }).toEqual({
      inFlight: 0,
      unflushed: 0,
      committedUsd: '0.00000000',
    });
  });

  it('a call the lease covers is served; one it does not cover is 503 unavailable; the books agree once the database is back', async () => {
    // Half a cent: the lease holds at most that, so a call with a large output bound needs Postgres.
    const session = await fundedSession(leasedEnv, '0.00500000');
    const fake = answeringUpstream();
    const app = gatewayWith({ upstreamFetch: fake.fetch });
    // A model that reasons out of sight is held for its whole output bound (a quota would start small).
    const large = { ...platformCall, model: 'openai:o4-mini', max_tokens: 12_000 };
    expect((await chat(app, leasedEnv, session.token, platformCall)).status).toBe(200);

    const down = databaseDown(leasedEnv);
    expect((await chat(app, down, session.token, platformCall)).status).toBe(200);
    await expectUnavailable(await chat(app, down, session.token, large));
    expect(fake.requests).toHaveLength(2);

    // The database is back: the large call is Postgres's to decide (it is more than the balance), and
    // the object books the two calls it served.
    const back = await chat(app, leasedEnv, session.token, large);
    expect(back.status).toBe(402);
    await walletObjectOf(session.token).flush();
    const [row] = await sql<{ n: string }>(leasedEnv, 'select count(*) as n from usage_events where end_user_id = $1', [session.endUserId]);
    expect(row?.n).toBe('2');
    await expectBooksAgree(leasedEnv, fake.requests);
  });
});

describe('a query the database ran and refused is not an outage', () => {
  /** Makes the next adjustment whose reason is `reason` fail in the database with `sqlstate`. */
  async function failAdjustments(reason: string, sqlstate: string) {
    const name = `test_fail_${sqlstate.toLowerCase()}`;
    await sql(
      testEnv,
      `create or replace function ${name}() returns trigger language plpgsql as $$
       begin
         if new.reason = '${reason}' then raise exception 'injected fault' using errcode = '${sqlstate}'; end if;
         return new;
       end $$`,
    );
    await sql(testEnv, `create trigger ${name} before insert on ledger_transactions for each row execute function ${name}()`);
  }

  it.each([
    ['40001', 'a serialization failure', 500, 'internal_error'],
    ['23505', 'a unique violation', 409, 'conflict'],
  ])('SQLSTATE %s (%s) answers %i %s, as before', async (sqlstate, _what, status, code) => {
    const reason = `injected ${sqlstate}`;
    await failAdjustments(reason, sqlstate);
    const session = await createSession(testEnv);
    const response = await call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/adjustments`, {
      token: adminToken,
      json: { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason },
    });
    expect(response.status).toBe(status);
    expect(((await response.json()) as Envelope).error.code).toBe(code);
    expect(response.headers.get('retry-after')).toBeNull();
  });
});

describe('the OpenAPI documents', () => {
  it('list 503 with retry-after on the routes that need the database', async () => {
    type Document = { paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>> };
    const apiDocument = (await (await call(api(), testEnv, '/openapi.json')).json()) as Document;
    const gatewayDocument = (await (await call(gateway(), testEnv, '/openapi.json')).json()) as Document;
    for (const [document, path] of [
      [apiDocument, '/v1/sessions'],
      [apiDocument, '/v1/user/stripe/checkout-sessions'],
      [apiDocument, '/v1/admin/wallets/{wallet_id}/adjustments'],
      [apiDocument, '/v1/admin/payouts/run-mock'],
      [gatewayDocument, '/v1/chat/completions'],
    ] as const) {
      expect(document.paths[path]?.post?.responses['503']?.headers).toHaveProperty('retry-after');
    }
  });
});
