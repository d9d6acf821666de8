/**
 * Aliases and fallback (docs/models.md, "Fallback and aliases"): a feature's alias resolves before
 * anything else; on a 500, a 429, a connect error or a timeout before the first byte the next
 * candidate is tried, never on a 400 and never once a stream was accepted; only the answering
 * attempt is booked, at its model's prices; `faucet.attempts` lists what was tried; the circuit of a
 * failing upstream opens, skips and recovers; the hold covers the fallback's worst case.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call, demoPublicAppId, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiCompletion, openAiSse, openSseResponse } from '../../../test/fake-upstream.ts';
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
  wallet,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  // A high failure count: only the circuit test (its own upstream URL) opens a circuit.
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', UPSTREAM_TIMEOUT_MS: '50', CIRCUIT_FAILURES: '1000' });
});

type Body = Record<string, any>;
const hello = (feature: string, model: string) => ({ model, feature, messages: [userMessage('hello')] });

async function addFeature(featureKey: string, routing: { aliases?: Record<string, string>; fallbacks?: string[] }) {
  await sql(
    testEnv,
    `insert into app_features (app_id, feature_key, name, default_model, model_aliases, fallback_models)
     select id, $1, $1, 'mock:echo', $3, $4 from apps where public_app_id = $2`,
    [featureKey, demoPublicAppId, JSON.stringify(routing.aliases ?? {}), JSON.stringify(routing.fallbacks ?? [])],
  );
}

const feature = () => `fb_${crypto.randomUUID().slice(0, 8)}`;

/** An OpenAI upstream answering `gpt-4o` and failing `gpt-4o-mini` with `failure`. */
function upstreamFailingMini(failure: (signal: AbortSignal) => Response | Promise<Response>) {
  return fakeUpstream(async (request, signal) => {
    const model = (request.body as { model: string }).model;
    if (model === 'gpt-4o-mini') return failure(signal);
    return jsonResponse(openAiCompletion('from the fallback'));
  });
}

describe('aliases', () => {
  it('resolve to the feature target before anything else; the faucet object names the model that answered', async () => {
    const key = feature();
    await addFeature(key, { aliases: { fast: 'openai:gpt-4o' } });
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hi')));
    const requestId = newRequestId();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, hello(key, 'fast'), requestId);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Body;
    expect(body.faucet).toMatchObject({
      provider: 'openai',
      model: 'gpt-4o',
      attempts: [{ provider: 'openai', model: 'gpt-4o', outcome: 'ok' }],
    });
    expect((upstream.requests[0]?.body as Body | undefined)?.model).toBe('gpt-4o');
    await settled(testEnv);
    expect((await usageRows(testEnv, requestId))[0]).toMatchObject({ provider: 'openai', model: 'gpt-4o' });
  });

  it('an alias the feature does not have is 400, nothing held; with an unknown session 401', async () => {
    const key = feature();
    await addFeature(key, { aliases: { fast: 'openai:gpt-4o' } });
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(gatewayWith(), testEnv, session.token, hello(key, 'smart'), requestId);
    expect(response.status).toBe(400);
    expect(((await response.json()) as Body).error.code).toBe('invalid_request');
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    const unknown = await chat(gatewayWith(), testEnv, `fvs_${'A'.repeat(43)}`, hello(key, 'fast'));
    expect(unknown.status).toBe(401);
  });
});

describe('fallback', () => {
  it.each([
    ['a 500', () => jsonResponse({ error: { message: 'boom' } }, 500), 500, 'upstream_error'],
    ['a 429 with retry-after', () => jsonResponse({ error: { message: 'slow down' } }, 429, { 'retry-after': '1' }), 429, 'rate_limited'],
    [
      'a connect error',
      () => {
        throw new TypeError('connect ECONNREFUSED');
      },
      undefined,
      'upstream_error',
    ],
    [
      'a timeout before the first byte',
      (signal: AbortSignal) =>
        new Promise<Response>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
      undefined,
      'upstream_timeout',
    ],
  ])('on %s tries the next candidate; only the answering attempt is booked, at its prices', async (_, failure, status, code) => {
    const key = feature();
    await addFeature(key, { fallbacks: ['openai:gpt-4o'] });
    const session = await fundedSession(testEnv);
    const upstream = upstreamFailingMini(failure as (signal: AbortSignal) => Response);
    const requestId = newRequestId();
    const started = Date.now();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      hello(key, 'openai:gpt-4o-mini'),
      requestId,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Body;
    expect(body.faucet.model).toBe('gpt-4o');
    expect(body.faucet.attempts).toEqual([
      { provider: 'openai', model: 'gpt-4o-mini', outcome: 'error', ...(status === undefined ? {} : { status }), error_code: code },
      { provider: 'openai', model: 'gpt-4o', outcome: 'ok' },
    ]);
    if (code === 'rate_limited') expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    // Each attempt has its own upstream id; the key never appears in the metadata.
    const callId = response.headers.get('x-faucet-call-id');
    expect(upstream.requests.map((request) => request.headers['x-client-request-id'])).toEqual([callId, `${callId}:1`]);
    expect(JSON.stringify(body)).not.toContain('sk-platform-pool-test');
    await settled(testEnv);
    const rows = await usageRows(testEnv, requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ model: 'gpt-4o', input_tokens: 11, output_tokens: 7, estimated: false });
    // Rated at gpt-4o's prices (2.50 / 10.00 per million in, 10x gpt-4o-mini's): 11 * 2.5e-6 + 7 * 10e-6 at cost.
    expect(rows[0]?.upstream_cost_usd).toBe('0.00009750');
    // Its worst case no longer held.
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
  });

  it('never falls back on a 400: the request is at fault; nothing booked, the hold released', async () => {
    const key = feature();
    await addFeature(key, { fallbacks: ['openai:gpt-4o'] });
    const session = await fundedSession(testEnv);
    const upstream = upstreamFailingMini(() => jsonResponse({ error: { message: 'bad request' } }, 400));
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      hello(key, 'openai:gpt-4o-mini'),
      requestId,
    );
    expect(response.status).toBe(400);
    expect(upstream.requests).toHaveLength(1);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toEqual([]);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '1.00000000', held: '0.00000000' });
  });

  it('when every candidate fails: the last error, nothing booked, the hold released', async () => {
    const key = feature();
    await addFeature(key, { fallbacks: ['openai:gpt-4o'] });
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse({ error: { message: 'down' } }, 503));
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      hello(key, 'openai:gpt-4o-mini'),
      requestId,
    );
    expect(response.status).toBe(502);
    expect(((await response.json()) as Body).error.code).toBe('upstream_error');
    expect(upstream.requests).toHaveLength(2);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toEqual([]);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '1.00000000', held: '0.00000000' });
  });

  it('never retries once a stream was accepted: a chunk then death is booked at the bound, no second attempt', async () => {
    const key = feature();
    await addFeature(key, { fallbacks: ['openai:gpt-4o'] });
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream((request, signal) =>
      (request.body as Body).model === 'gpt-4o-mini'
        ? openSseResponse(openAiSse([openAiChunk({ role: 'assistant', content: 'partial' })], false), signal).response
        : jsonResponse(openAiCompletion('never')),
    );
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { ...hello(key, 'openai:gpt-4o-mini'), stream: true },
      requestId,
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('partial');
    expect(upstream.requests).toHaveLength(1);
    await settled(testEnv);
    const rows = await usageRows(testEnv, requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ model: 'gpt-4o-mini', estimated: true });
  });

  it('the hold covers the fallback: a tiny balance that covers only the cheap model is refused up front (402), nothing called', async () => {
    const key = feature();
    await addFeature(key, { aliases: { fast: 'openai:gpt-4o-mini' }, fallbacks: ['openai:o1'] });
    const cheapOnly = await fundedSession(testEnv, '0.02000000');
    const upstream = fakeUpstream(() => jsonResponse({ error: { message: 'down' } }, 500));
    const requestId = newRequestId();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, cheapOnly.token, hello(key, 'fast'), requestId);
    expect(response.status).toBe(402);
    expect(upstream.requests).toHaveLength(0);
    await settled(testEnv);
    expect(await wallet(testEnv, cheapOnly.walletId)).toMatchObject({ balance: '0.02000000', held: '0.00000000' });
    // Without the fallback the same balance covers the call.
    const plain = feature();
    await addFeature(plain, { aliases: { fast: 'openai:gpt-4o-mini' } });
    const ok = await chat(
      gatewayWith({ upstreamFetch: fakeUpstream(() => jsonResponse(openAiCompletion('hi'))).fetch }),
      testEnv,
      cheapOnly.token,
      hello(plain, 'fast'),
    );
    expect(ok.status).toBe(200);
  });
});

describe('circuit breaking', () => {
  it('opens after consecutive failures, skips the upstream (listed), then lets one probe through and closes', async () => {
    const env = { ...testEnv, CIRCUIT_FAILURES: '2', CIRCUIT_COOLDOWN_MS: '300', OPENAI_BASE_URL: 'https://circuit.example.test/v1' };
    const key = feature();
    await addFeature(key, { fallbacks: ['mock:echo'] });
    const session = await fundedSession(testEnv);
    let healthy = false;
    const upstream = fakeUpstream(() =>
      healthy ? jsonResponse(openAiCompletion('back')) : jsonResponse({ error: { message: 'down' } }, 500),
    );
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const send = async () => {
      const response = await call(app, env, '/v1/chat/completions', {
        json: hello(key, 'openai:gpt-4o-mini'),
        token: session.token,
        headers: { 'x-request-id': newRequestId() },
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as Body).faucet.attempts.map((attempt: Body) => attempt.outcome);
    };
    expect(await send()).toEqual(['error', 'ok']);
    expect(await send()).toEqual(['error', 'ok']);
    expect(await send()).toEqual(['skipped_circuit_open', 'ok']);
    expect(upstream.requests).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 350));
    healthy = true;
    expect(await send()).toEqual(['ok']);
    expect(await send()).toEqual(['ok']);
    expect(upstream.requests).toHaveLength(4);
  });
});
