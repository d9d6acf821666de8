import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '#shared/crypto.ts';
import {
  api,
  adminToken,
  call,
  createSession,
  createTestEnv,
  demoFixture,
  demoPublicAppId,
  developerKey,
  sql,
  type TestEnv,
} from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

/** A report of `session`'s user: `user_id_hash` is the `user_ref` its session answer carried. */
const report = (session: { userRef: string }, overrides: Record<string, unknown> = {}) => ({
  request_id: `local-${crypto.randomUUID()}`,
  public_app_id: demoPublicAppId,
  user_id_hash: session.userRef,
  feature: 'chat',
  route_mode: 'local',
  provider: 'ollama',
  model: 'llama3.2:3b',
  input_tokens: 120,
  output_tokens: 80,
  estimated: true,
  occurred_at: '2026-11-22T01:00:00.000Z',
  ...overrides,
});

const send = (token: string, json: unknown, env: TestEnv = testEnv) => call(api(), env, '/v1/usage/local', { json, token });

/** What a report of this end user wrote: usage records and usage bookings on their wallet. */
async function eventsOf(endUserId: string, env: TestEnv = testEnv) {
  const [row] = await sql<{ events: number }>(
    env,
    `select (select count(*)::int from usage_events where end_user_id = $1)
          + (select count(*)::int from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
               join wallets w on w.id = e.wallet_id where w.end_user_id = $1 and t.kind = 'usage') as events`,
    [endUserId],
  );
  return row!.events;
}

/** The feature a report was booked under and the feature prices its ledger transaction recorded. */
async function bookedPricing(requestId: string) {
  const [row] = await sql<{ feature_key: string; feature_pricing: Record<string, unknown> }>(
    testEnv,
    `select u.feature_key, t.metadata -> 'feature_pricing' as feature_pricing
       from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
  return row;
}

async function expectRefused(response: Response, status: number, code: string, message: string) {
  expect(response.status).toBe(status);
  const envelope = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  expect(envelope.error).toEqual({ code, message: expect.stringContaining(message), request_id: response.headers.get('x-request-id') });
}

describe('POST /v1/usage/local', () => {
  it('records a local call at zero upstream cost', async () => {
    const session = await createSession(testEnv);
    const body = report(session);
    const response = await send(session.token, body);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      request_id: body.request_id,
      recorded: true,
      route_mode: 'local',
      charge: { currency: 'USD', amount_usd: '0.00000000', upstream_cost_usd: '0.00000000' },
    });
    const [event] = await sql(
      testEnv,
      `select route_mode, provider, model, input_tokens, output_tokens, estimated, feature_key, upstream_cost_usd::text as upstream
         from usage_events where client_request_id = $1 and end_user_id = $2`,
      [body.request_id, session.endUserId],
    );
    expect(event).toEqual({
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3.2:3b',
      input_tokens: 120,
      output_tokens: 80,
      estimated: true,
      feature_key: 'chat',
      upstream: '0.00000000',
    });
  });

  it('records a request id once: the replay answers recorded false', async () => {
    const session = await createSession(testEnv);
    const body = report(session);
    await send(session.token, body);
    const replay = await send(session.token, body);
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { recorded: boolean }).recorded).toBe(false);
    const [row] = await sql<{ events: number }>(testEnv, 'select count(*)::int as events from usage_events where client_request_id = $1', [
      body.request_id,
    ]);
    expect(row!.events).toBe(1);
  });

  it("charges the feature's open fee, and refuses it with 402 beyond the balance", async () => {
    const { app_id: appId } = await demoFixture(testEnv);
    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model, open_fee_usd)
       values ($1, 'summarize', 'Summarize', 'mock:echo', 0.001)`,
      [appId],
    );
    const session = await createSession(testEnv);
    await call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/credit-test-balance`, {
      json: { amount_usd: '0.00150000' },
      token: adminToken,
    });
    const first = await send(session.token, report(session, { feature: 'summarize' }));
    expect(((await first.json()) as { charge: { amount_usd: string } }).charge.amount_usd).toBe('0.00100000');
    const [wallet] = await sql<{ balance: string }>(testEnv, 'select balance::text from wallets where id = $1', [session.walletId]);
    expect(wallet!.balance).toBe('0.00050000');
    const second = await send(session.token, report(session, { feature: 'summarize' }));
    expect(second.status).toBe(402);
  });

  it('refuses a report from another app than the session', async () => {
    const session = await createSession(testEnv);
    const response = await send(session.token, report(session, { public_app_id: 'app_someone_else' }));
    expect(response.status).toBe(403);
  });

  it('answers 404 for a feature the app does not have, writing nothing', async () => {
    const session = await createSession(testEnv);
    const response = await send(session.token, report(session, { feature: 'no-such-feature' }));
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(await eventsOf(session.endUserId)).toBe(0);
  });

  it('records the feature prices its booking used in the ledger metadata, as a gateway booking does', async () => {
    const { app_id: appId } = await demoFixture(testEnv);
    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model, developer_price_per_mtok_usd, open_fee_usd)
       values ($1, 'priced-local', 'Priced', 'mock:echo', 3, 0.0002)`,
      [appId],
    );
    const session = await createSession(testEnv);
    await call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/credit-test-balance`, {
      json: { amount_usd: '1.00000000' },
      token: adminToken,
    });
    const body = report(session, { feature: 'priced-local' });
    expect((await send(session.token, body)).status).toBe(200);
    expect(await bookedPricing(body.request_id)).toEqual({
      feature_key: 'priced-local',
      feature_pricing: { feature_key: 'priced-local', developer_price_per_mtok_usd: '3.00000000', open_fee_usd: '0.00020000' },
    });
  });

  it('refuses a report naming an archived feature with 403, writing nothing', async () => {
    const { app_id: appId } = await demoFixture(testEnv);
    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model) values ($1, 'retired-local', 'Retired', 'mock:echo')`,
      [appId],
    );
    const archived = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/features/retired-local/archive`, {
      method: 'POST',
      token: developerKey,
    });
    expect(archived.status).toBe(200);
    const session = await createSession(testEnv);
    const response = await send(session.token, report(session, { feature: 'retired-local' }));
    await expectRefused(response, 403, 'forbidden', 'Feature "retired-local" is archived');
    expect(await eventsOf(session.endUserId)).toBe(0);
  });

  it.each([
    ['prompt text', { prompt: 'hello' }],
    ['messages', { messages: [{ role: 'user', content: 'hi' }] }],
    ['output text', { output: 'secret answer' }],
    ['negative tokens', { input_tokens: -1 }],
    ['fractional tokens', { output_tokens: 1.5 }],
    ['tokens as a string', { input_tokens: '12' }],
    ['another route mode', { route_mode: 'platform' }],
    ['a bad request id', { request_id: 'has spaces' }],
    ['an uppercase user hash', { user_id_hash: 'A'.repeat(64) }],
    ['a date that is not ISO-8601', { occurred_at: 'yesterday' }],
  ])('refuses a report with %s with 400', async (_label, change) => {
    const session = await createSession(testEnv);
    const body = report(session, change);
    const response = await send(session.token, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    const [row] = await sql<{ events: number }>(testEnv, 'select count(*)::int as events from usage_events where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(row!.events).toBe(0);
  });

  it.each([
    ["another user's user_ref", async () => (await createSession(testEnv)).userRef],
    ["a SHA-256 of the user's raw id (the old, guessable derivation)", async (externalUserId: string) => sha256Hex(externalUserId)],
    ['any well-formed value', async () => 'a'.repeat(64)],
  ])('refuses a report naming %s with 403, writing nothing', async (_label, forge) => {
    const externalUserId = `victim-${crypto.randomUUID()}@example.test`;
    const session = await createSession(testEnv, externalUserId);
    const body = report(session, { user_id_hash: await forge(externalUserId) });
    const response = await send(session.token, body);
    expect(response.status).toBe(403);
    const envelope = (await response.json()) as { error: { code: string; message: string; request_id: string } };
    expect(envelope.error).toMatchObject({ code: 'forbidden', request_id: response.headers.get('x-request-id') });
    expect(envelope.error.message).not.toContain(session.userRef);
    const [row] = await sql<{ events: number }>(
      testEnv,
      'select count(*)::int as events from usage_events where end_user_id = $1 or client_request_id = $2',
      [session.endUserId, body.request_id],
    );
    expect(row!.events).toBe(0);
  });

  it("accepts a user's ref from any of their sessions, and only theirs", async () => {
    const externalUserId = `user-${crypto.randomUUID()}`;
    const first = await createSession(testEnv, externalUserId);
    const second = await createSession(testEnv, externalUserId);
    expect(second.userRef).toBe(first.userRef);
    expect((await send(second.token, report(first))).status).toBe(200);
  });

  it('refuses a report without a session with 401', async () => {
    const response = await call(api(), testEnv, '/v1/usage/local', { json: report({ userRef: 'a'.repeat(64) }) });
    expect(response.status).toBe(401);
  });
});

/** App-wide changes (default feature, suspension, archive) on a database of their own, in this order. */
describe('POST /v1/usage/local: app and developer state', () => {
  let own: TestEnv;
  beforeAll(async () => {
    own = await createTestEnv();
  });

  it("books a report without feature under the app's default feature, at its prices", async () => {
    const created = await call(api(), own, `/v1/developer/apps/${demoPublicAppId}/features`, {
      json: { feature_key: 'fee-default', name: 'Fee default', default_model: 'mock:echo', open_fee_usd: '0.00030000' },
      token: developerKey,
    });
    expect(created.status).toBe(201);
    const changed = await call(api(), own, `/v1/developer/apps/${demoPublicAppId}`, {
      method: 'PATCH',
      json: { default_feature_key: 'fee-default' },
      token: developerKey,
    });
    expect(changed.status).toBe(200);
    const session = await createSession(own);
    await call(api(), own, `/v1/admin/wallets/${session.walletId}/credit-test-balance`, {
      json: { amount_usd: '1.00000000' },
      token: adminToken,
    });
    const { feature: _omitted, ...body } = report(session);
    const response = await send(session.token, body, own);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { charge: { amount_usd: string } }).charge.amount_usd).toBe('0.00030000');
    const [event] = await sql<{ feature_key: string; feature_pricing: Record<string, unknown> }>(
      own,
      `select u.feature_key, t.metadata -> 'feature_pricing' as feature_pricing
         from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
      [body.request_id],
    );
    expect(event).toEqual({
      feature_key: 'fee-default',
      feature_pricing: { feature_key: 'fee-default', developer_price_per_mtok_usd: null, open_fee_usd: '0.00030000' },
    });
  });

  it("refuses a report of a suspended developer's app with 403, writing nothing, and takes it after unsuspend", async () => {
    const session = await createSession(own);
    const { developer_id: developerId } = await demoFixture(own);
    const suspend = (action: string) =>
      call(api(), own, `/v1/admin/developers/${developerId}/${action}`, { method: 'POST', token: adminToken });
    expect((await suspend('suspend')).status).toBe(200);
    const body = report(session);
    await expectRefused(await send(session.token, body, own), 403, 'forbidden', 'developer is suspended');
    expect(await eventsOf(session.endUserId, own)).toBe(0);
    expect((await suspend('unsuspend')).status).toBe(200);
    expect((await send(session.token, body, own)).status).toBe(200);
  });

  it('refuses a report without feature with 400 when the app has no default feature, writing nothing', async () => {
    const session = await createSession(own);
    await sql(own, `update apps set default_feature_key = null where public_app_id = $1`, [demoPublicAppId]);
    const { feature: _omitted, ...body } = report(session);
    await expectRefused(await send(session.token, body, own), 400, 'invalid_request', 'no default feature');
    expect(await eventsOf(session.endUserId, own)).toBe(0);
    await sql(own, `update apps set default_feature_key = 'chat' where public_app_id = $1`, [demoPublicAppId]);
  });

  it('refuses a report of an archived app with 403, writing nothing', async () => {
    const session = await createSession(own);
    const archived = await call(api(), own, `/v1/developer/apps/${demoPublicAppId}/archive`, { method: 'POST', token: developerKey });
    expect(archived.status).toBe(200);
    for (const body of [report(session), report(session, { feature: undefined })]) {
      await expectRefused(await send(session.token, body, own), 403, 'forbidden', 'This app is archived');
    }
    expect(await eventsOf(session.endUserId, own)).toBe(0);
  });
});
