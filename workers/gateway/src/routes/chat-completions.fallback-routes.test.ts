/**
 * Fallback on the routes that call with someone else's key (docs/models.md, "Fallback and aliases",
 * "Keys per candidate, on the call's route"): on byok a fallback of another provider is called with
 * the end user's own key of that provider — never another user's, never the platform pool — and the
 * booking names that key; on developer_key only candidates of the reserved key's provider are tried,
 * with that key, and the reservation and hold cover the costlier same-provider fallback.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatUsd } from '#shared/money/index.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  reservedForCalls,
  settled,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeAnthropicKey, fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-openai',
    ANTHROPIC_API_KEY: 'sk-ant-platform-pool-anthropic',
    CIRCUIT_FAILURES: '1000',
    // The holds here are the candidates' worst cases: a quota step larger than any bound here grants
    // the whole bound at once, as a call that cannot be cut is held (docs/quota.md).
    QUOTA_STEP_TOKENS: '65536',
  });
});

type Body = Record<string, any>;

async function addFeature(featureKey: string, fallbacks: string[], prices: { openFee?: string } = {}) {
  await sql(
    testEnv,
    `insert into app_features (app_id, feature_key, name, default_model, fallback_models, open_fee_usd)
     select id, $1, $1, 'openai:gpt-4o-mini', $3, $4 from apps where public_app_id = $2`,
    [featureKey, demoPublicAppId, JSON.stringify(fallbacks), prices.openFee ?? '0'],
  );
}

const feature = () => `fr_${crypto.randomUUID().slice(0, 8)}`;

async function storeKey(path: string, token: string, json: Record<string, unknown>): Promise<string> {
  const stored = await send(testEnv, path, { json, token });
  expect(stored.status).toBe(201);
  return stored.body.id as string;
}

const anthropicMessage = () =>
  jsonResponse({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [{ type: 'text', text: 'from the fallback' }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 9, output_tokens: 3 },
  });

/** OpenAI fails with a 500; Anthropic answers. */
const openAiDown = () =>
  fakeUpstream((request) =>
    request.url.startsWith('https://api.anthropic.com/') ? anthropicMessage() : jsonResponse({ error: { message: 'down' } }, 500),
  );

const bookedCredential = async (requestId: string) =>
  (
    await sql<{ provider_credential_id: string | null }>(
      testEnv,
      'select provider_credential_id::text from usage_events where client_request_id = $1',
      [requestId],
    )
  )[0]?.provider_credential_id;

describe('byok fallback to another provider', () => {
  it("calls the fallback with the end user's own key of that provider; books the open fee once, on that key", async () => {
    const key = feature();
    await addFeature(key, ['anthropic:claude-haiku-4-5'], { openFee: '0.01000000' });
    const session = await fundedSession(testEnv);
    const openAiKey = fakeOpenAiKey();
    const anthropicKey = fakeAnthropicKey();
    await storeKey('/v1/user/provider-keys', session.token, { provider: 'openai', api_key: openAiKey });
    const anthropicId = await storeKey('/v1/user/provider-keys', session.token, { provider: 'anthropic', api_key: anthropicKey });
    const upstream = openAiDown();
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: key, route_mode: 'byok', messages: [userMessage('hello')] },
      requestId,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Body;
    expect(body.faucet).toMatchObject({
      route_mode: 'byok',
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      charge: { amount_usd: '0.01000000' },
    });
    expect(body.faucet.attempts).toEqual([
      { provider: 'openai', model: 'gpt-4o-mini', outcome: 'error', status: 500, error_code: 'upstream_error' },
      { provider: 'anthropic', model: 'claude-haiku-4-5', outcome: 'ok' },
    ]);
    // Each attempt with the user's key of its provider; the platform pool never.
    expect(upstream.requests.map((request) => request.url)).toEqual([
      'https://api.openai.com/v1/chat/completions',
      'https://api.anthropic.com/v1/messages',
    ]);
    expect(upstream.requests[0]?.headers.authorization).toBe(`Bearer ${openAiKey}`);
    expect(upstream.requests[1]?.headers['x-api-key']).toBe(anthropicKey);
    expect(JSON.stringify(upstream.requests)).not.toContain('platform-pool');
    expect(JSON.stringify(body)).not.toContain(anthropicKey);

    await settled(testEnv);
    const rows = await usageRows(testEnv, requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ route_mode: 'byok', provider: 'anthropic', retail_usd: '0.01000000', upstream_cost_usd: '0.00000000' });
    expect(await bookedCredential(requestId)).toBe(anthropicId);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '0.99000000', held: '0.00000000' });
  });

  it("without their own key of the fallback's provider the fallback is skipped — another user's key and the pool are never used", async () => {
    const key = feature();
    await addFeature(key, ['anthropic:claude-haiku-4-5'], { openFee: '0.01000000' });
    // Another end user of the same app has an Anthropic key.
    const other = await fundedSession(testEnv);
    const othersKey = fakeAnthropicKey();
    await storeKey('/v1/user/provider-keys', other.token, { provider: 'anthropic', api_key: othersKey });
    const session = await fundedSession(testEnv);
    await storeKey('/v1/user/provider-keys', session.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    const upstream = openAiDown();
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: key, route_mode: 'byok', messages: [userMessage('hello')] },
      requestId,
    );
    expect(response.status).toBe(502);
    expect(((await response.json()) as Body).error.code).toBe('upstream_error');
    expect(upstream.requests).toHaveLength(1);
    expect(JSON.stringify(upstream.requests)).not.toContain(othersKey);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '1.00000000', held: '0.00000000' });
  });
});

describe('byok fallback to a registered endpoint', () => {
  it("calls an end user's Azure fallback at the resource registered with their key, with that key, and books on it", async () => {
    const key = feature();
    await addFeature(key, ['azure:gpt-4o-mini'], { openFee: '0.01000000' });
    const session = await fundedSession(testEnv);
    await storeKey('/v1/user/provider-keys', session.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    const azureKey = `az${crypto.randomUUID().replaceAll('-', '')}`;
    const azureId = await storeKey('/v1/user/provider-keys', session.token, {
      provider: 'azure',
      api_key: azureKey,
      base_url: 'https://contoso-user.openai.azure.com/openai?api-version=2025-01-01-preview',
    });
    const upstream = fakeUpstream((request) =>
      request.url.startsWith('https://api.openai.com/')
        ? jsonResponse({ error: { message: 'down' } }, 500)
        : jsonResponse(openAiCompletion('from Azure')),
    );
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: key, route_mode: 'byok', messages: [userMessage('hello')] },
      requestId,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Body;
    expect(body.faucet.attempts).toEqual([
      { provider: 'openai', model: 'gpt-4o-mini', outcome: 'error', status: 500, error_code: 'upstream_error' },
      { provider: 'azure', model: 'gpt-4o-mini', outcome: 'ok' },
    ]);
    expect(upstream.requests.map((request) => request.url)).toEqual([
      'https://api.openai.com/v1/chat/completions',
      'https://contoso-user.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2025-01-01-preview',
    ]);
    expect(upstream.requests[1]?.headers['api-key']).toBe(azureKey);
    expect(upstream.requests[1]?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain(azureKey);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toMatchObject([{ route_mode: 'byok', provider: 'azure', retail_usd: '0.01000000' }]);
    expect(await bookedCredential(requestId)).toBe(azureId);
  });
});

describe('developer_key fallback', () => {
  it("tries only the reserved key's provider, with that key; reservation and hold cover the costlier fallback; booked at its prices", async () => {
    const developerOpenAiKey = fakeOpenAiKey();
    const credentialId = await storeKey('/v1/developer/provider-keys', developerKey, {
      provider: 'openai',
      api_key: developerOpenAiKey,
      monthly_budget_usd: '100.00000000',
    });
    const key = feature();
    await addFeature(key, ['anthropic:claude-haiku-4-5', 'openai:gpt-4o']);
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream((request) =>
      (request.body as Body).model === 'gpt-4o-mini'
        ? jsonResponse({ error: { message: 'slow down' } }, 429)
        : request.url.startsWith('https://api.anthropic.com/')
          ? anthropicMessage()
          : jsonResponse(openAiCompletion('from gpt-4o')),
    );
    let reserved: { reservation: string; hold: string } | undefined;
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({
        upstreamFetch: async (request) => {
          // While the call is in flight (its user's only one): what it reserved on the key and held on the wallet.
          reserved ??= {
            reservation: formatUsd(await reservedForCalls(testEnv, session, credentialId)),
            hold: formatUsd(await heldForCalls(testEnv, session)),
          };
          return upstream.fetch(request);
        },
      }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: key, route_mode: 'developer_key', messages: [userMessage('hello')] },
      requestId,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Body;
    expect(body.faucet).toMatchObject({ route_mode: 'developer_key', provider: 'openai', model: 'gpt-4o' });
    expect(body.faucet.attempts).toEqual([
      { provider: 'openai', model: 'gpt-4o-mini', outcome: 'error', status: 429, error_code: 'rate_limited' },
      { provider: 'anthropic', model: 'claude-haiku-4-5', outcome: 'skipped_no_route' },
      { provider: 'openai', model: 'gpt-4o', outcome: 'ok' },
    ]);
    expect(upstream.requests.map((request) => (request.body as Body).model)).toEqual(['gpt-4o-mini', 'gpt-4o']);
    expect(upstream.requests.map((request) => request.headers.authorization)).toEqual([
      `Bearer ${developerOpenAiKey}`,
      `Bearer ${developerOpenAiKey}`,
    ]);
    const callId = response.headers.get('x-faucet-call-id');
    expect(upstream.requests.map((request) => request.headers['x-client-request-id'])).toEqual([callId, `${callId}:2`]);

    await settled(testEnv);
    const rows = await usageRows(testEnv, requestId);
    expect(rows).toHaveLength(1);
    // gpt-4o at cost (no developer price): 11 * 2.5e-6 + 7 * 10e-6.
    expect(rows[0]).toMatchObject({
      route_mode: 'developer_key',
      model: 'gpt-4o',
      retail_usd: '0.00009750',
      upstream_cost_usd: '0.00009750',
    });
    expect(await bookedCredential(requestId)).toBe(credentialId);
    // The reservation (the key's budget) and the hold were sized at the costliest same-provider candidate.
    const { reservation, hold } = reserved ?? { reservation: '0', hold: '0' };
    expect(reservation).toBe(hold);
    const [bounds] = await sql<{ input: number; output: number }>(
      testEnv,
      'select bound_input_tokens as input, bound_output_tokens as output from gateway_calls where client_request_id = $1',
      [requestId],
    );
    // gpt-4o's worst case at its per-token prices (2.50 / 10.00 per million) and its own output cap
    // (16,384; the call's output bound is the larger one of the Anthropic fallback, never tried here),
    // not gpt-4o-mini's (0.15 / 0.60).
    expect(bounds!.output).toBeGreaterThan(16_384);
    expect(Number(reservation)).toBeCloseTo((bounds!.input * 2.5 + 16_384 * 10) / 1e6, 6);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '0.99990250', held: '0.00000000' });
  });
});
