import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  usageRows,
  userMessage,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const hello = { model: 'mock:echo', messages: [userMessage('hello')] };

async function addFeature(featureKey: string, columns: Record<string, unknown> = {}) {
  const names = Object.keys(columns);
  await sql(
    testEnv,
    `insert into app_features (app_id, feature_key, name, default_model${names.map((name) => `, ${name}`).join('')})
     select id, $1, $1, 'mock:echo'${names.map((_, index) => `, $${index + 3}`).join('')} from apps where public_app_id = $2`,
    [featureKey, demoPublicAppId, ...Object.values(columns)],
  );
}

async function ledgerMetadata(requestId: string) {
  const [row] = await sql<{ metadata: Record<string, unknown> }>(
    testEnv,
    `select t.metadata from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
  return row?.metadata;
}

/**
 * A feature `featureKey` with an open fee of 0.001; its fee becomes 0.002 while a first call is with
 * the upstream, then a second call of the same user follows. Both are settled.
 */
/** The fee raised the way a test reaches into the database; `raiseThroughApi` is the developer's own way. */
async function raiseInDatabase(env: TestEnv, featureKey: string): Promise<void> {
  await sql(env, `update app_features set open_fee_usd = '0.00200000' where feature_key = $1`, [featureKey]);
}

async function raiseThroughApi(env: TestEnv, featureKey: string) {
  const response = await call(api(), env, `/v1/developer/apps/${demoPublicAppId}/features/${featureKey}`, {
    method: 'PATCH',
    token: developerKey,
    json: { open_fee_usd: '0.00200000' },
  });
  expect(response.status).toBe(200);
}

async function priceChangedDuringCall(env: TestEnv, featureKey: string, raise = raiseInDatabase) {
  await addFeature(featureKey, { open_fee_usd: '0.00100000' });
  const session = await fundedSession(env);
  let answer: (response: Response) => void = () => undefined;
  const waiting = new Promise<Response>((resolve) => {
    answer = resolve;
  });
  let reached: () => void = () => undefined;
  const upstreamReached = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const upstream = fakeUpstream(() => {
    reached();
    return waiting;
  });
  const body = { model: 'openai:gpt-4o-mini', feature: featureKey, messages: [userMessage('hi')] };
  const first = newRequestId();
  const inFlight = chat(gatewayWith({ upstreamFetch: upstream.fetch }), env, session.token, body, first);
  await upstreamReached;
  await raise(env, featureKey);
  answer(jsonResponse(openAiCompletion('hello')));
  expect((await inFlight).status).toBe(200);

  const second = newRequestId();
  const next = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
  expect((await chat(gatewayWith({ upstreamFetch: next.fetch }), env, session.token, body, second)).status).toBe(200);
  await settled(env);
  return { first, second };
}

/** An upstream that must not be reached. */
const forbiddenUpstream = () =>
  fakeUpstream(() => {
    throw new Error('the upstream must not be called');
  });

describe('the feature of a call', () => {
  it('a call without `feature` uses the app default feature and says so in its faucet object and usage record', async () => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { faucet: { feature: string } };
    expect(body.faucet.feature).toBe('chat');
    await settled(testEnv);
    expect((await usageRows(testEnv, requestId))[0]?.feature_key).toBe('chat');
    expect(await ledgerMetadata(requestId)).toMatchObject({
      feature_pricing: { feature_key: 'chat', developer_price_per_mtok_usd: null, open_fee_usd: '0.00000000' },
    });
  });

  it('a model outside the feature allowed models gets 403 forbidden, before any hold or upstream call', async () => {
    await addFeature('restricted', { allowed_models: JSON.stringify(['openai:gpt-4o-mini']) });
    const session = await fundedSession(testEnv);
    const upstream = forbiddenUpstream();
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { ...hello, feature: 'restricted' },
      requestId,
    );
    expect(response.status).toBe(403);
    const body = (await response.json()) as { error: { code: string; request_id: string } };
    expect(body.error).toMatchObject({ code: 'forbidden', request_id: requestId });
    expect(upstream.requests).toHaveLength(0);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    expect(await sql(testEnv, 'select 1 from gateway_calls where client_request_id = $1', [requestId])).toEqual([]);
  });

  it('an archived feature, and any call of an archived app, is refused with 403 and nothing is held', async () => {
    await addFeature('retired', { archived_at: new Date().toISOString() });
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const retired = await chat(gatewayWith(), testEnv, session.token, { ...hello, feature: 'retired' }, requestId);
    expect(retired.status).toBe(403);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);

    await sql(testEnv, 'update apps set archived_at = now() where public_app_id = $1', [demoPublicAppId]);
    try {
      const archived = await chat(gatewayWith(), testEnv, session.token, hello);
      expect(archived.status).toBe(403);
      expect(((await archived.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    } finally {
      await sql(testEnv, 'update apps set archived_at = null where public_app_id = $1', [demoPublicAppId]);
    }
  });

  it('caps the output at the feature max output tokens: sent upstream as max_tokens when larger or absent', async () => {
    await addFeature('short', { max_output_tokens: 64 });
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('Paris')));
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const base = { model: 'openai:gpt-4o-mini', feature: 'short', messages: [userMessage('Capital of France?')] };
    expect((await chat(app, testEnv, session.token, base)).status).toBe(200);
    expect((await chat(app, testEnv, session.token, { ...base, max_tokens: 1000 })).status).toBe(200);
    expect((await chat(app, testEnv, session.token, { ...base, max_tokens: 10 })).status).toBe(200);
    expect(upstream.requests.map((request) => (request.body as { max_tokens?: number }).max_tokens)).toEqual([64, 64, 10]);
  });

  it('a price change does not apply to a call already authorized', async () => {
    const { first } = await priceChangedDuringCall(testEnv, 'priced');
    expect(await ledgerMetadata(first)).toMatchObject({ feature_pricing: { feature_key: 'priced', open_fee_usd: '0.00100000' } });
  });

  it("a developer's price change applies to the very next call: the API tells the app's wallet objects to read it again", async () => {
    const { first, second } = await priceChangedDuringCall(testEnv, 'priced-api', raiseThroughApi);
    expect(await ledgerMetadata(first)).toMatchObject({ feature_pricing: { feature_key: 'priced-api', open_fee_usd: '0.00100000' } });
    expect(await ledgerMetadata(second)).toMatchObject({ feature_pricing: { feature_key: 'priced-api', open_fee_usd: '0.00200000' } });
  });
});
