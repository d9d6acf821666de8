/**
 * A developer's own custom OpenAI-compatible server on the developer_key route:
 * its models have no catalog price, so a call is served exactly when its feature sets
 * `developer_price_per_mtok_usd`: held at the worst-case tokens × that price, sent to the root
 * registered with the developer's key, booked at that price (upstream cost 0: Faucet does not know
 * what the server costs and pays nothing for it), the developer's revenue the price less the
 * platform fee. Without a feature price, or on the platform route, it is refused before anything is
 * held or sent. Another developer's server is never reached. The books and the upstream audit agree.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditUpstreamCalls } from '#shared/calls/upstream-audit.ts';
import { compareUsd, formatUsd, parseWireAmount, priceTokensThenRound, usdFromUnits, zeroUsd } from '#shared/money/index.ts';
import { randomToken } from '#shared/crypto.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiCompletion, openAiSse, sseResponse } from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  reservedForCalls,
  settled,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { callsKeptBy, sweepCallNow } from '../../../test/wallet-kit.ts';
import { adminToken, api, call, createDatabase, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { createDeveloper, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
let credentialId: string;
const serverKey = `vllm-${randomToken('', 24).replace(/[^A-Za-z0-9]/g, 'x')}`;
const root = 'https://llm.example.com/v1';
const features = `/v1/developer/apps/${demoPublicAppId}/features`;

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ PLATFORM_FEE_BPS: '1000', PLATFORM_MARKUP_BPS: '2000', CALL_SETTLE_GRACE_SECONDS: '1' });
  const stored = await send(testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'custom', api_key: serverKey, monthly_budget_usd: '1.00000000', base_url: root },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
  credentialId = stored.body.id as string;
  for (const [featureKey, price] of [
    ['custom_priced', '2.00000000'],
    ['custom_unpriced', null],
  ] as const) {
    const created = await call(api(), testEnv, features, {
      json: { feature_key: featureKey, name: featureKey, default_model: 'openai:gpt-4o-mini', developer_price_per_mtok_usd: price },
      token: developerKey,
    });
    expect(created.status).toBe(201);
  }
});

const answering = () =>
  fakeUpstream(() => jsonResponse(openAiCompletion('Paris.', { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })));

interface Booked {
  route_mode: string;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  retail_usd: string;
  upstream_cost_usd: string;
  developer_revenue_usd: string;
  platform_share_usd: string;
  price_catalog_version: string | null;
  input_price_per_mtok_usd: string | null;
  provider_credential_id: string;
  feature_pricing: Record<string, unknown>;
}

async function booked(requestId: string): Promise<Booked[]> {
  return sql<Booked>(
    testEnv,
    `select u.route_mode, u.provider, u.model, u.input_tokens, u.output_tokens, u.retail_usd::text, u.upstream_cost_usd::text,
            u.developer_revenue_usd::text, u.platform_share_usd::text, u.price_catalog_version, u.input_price_per_mtok_usd::text,
            u.provider_credential_id::text, t.metadata -> 'feature_pricing' as feature_pricing
       from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
}

/**
 * A developer_key call of the priced custom feature (at most 40 output tokens) that the server takes
 * and never answers, and whose isolate is lost (its promise never awaited): no settlement ever comes.
 */
async function neverSettled(env: TestEnv, token: string): Promise<string> {
  const upstream = fakeUpstream(() => new Promise<Response>(() => undefined));
  const requestId = newRequestId();
  void Promise.resolve(
    gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
        body: JSON.stringify({
          feature: 'custom_priced',
          model: 'custom:my-finetune',
          route_mode: 'developer_key',
          max_tokens: 40,
          messages: [userMessage('write a long story')],
        }),
      }),
      env,
      createExecutionContext(),
    ),
  ).catch(() => undefined);
  await expect.poll(() => upstream.requests.length).toBe(1);
  return requestId;
}

/** Booked once, estimated at its bound: every token of it at the feature's 2 USD per million, upstream cost 0. */
async function expectBookedAtBound(requestId: string) {
  const [bound] = await sql<{ input: number; output: number }>(
    testEnv,
    'select bound_input_tokens as input, bound_output_tokens as output from gateway_calls where client_request_id = $1',
    [requestId],
  );
  expect(bound!.output).toBe(40);
  // In 1e-8 USD: tokens × 2 × 100.
  const retail = formatUsd(usdFromUnits(BigInt(bound!.input + bound!.output) * 200n));
  expect(await booked(requestId)).toMatchObject([
    {
      route_mode: 'developer_key',
      provider: 'custom',
      input_tokens: bound!.input,
      output_tokens: 40,
      retail_usd: retail,
      upstream_cost_usd: '0.00000000',
      price_catalog_version: null,
      provider_credential_id: credentialId,
    },
  ]);
}

/**
 * What a call of `session` left once every call has settled: its call record (unless abandoned), what
 * the wallet still holds and the key's budget still reserves for the user's calls, its bookings.
 */
async function leftBehind(session: { token: string; walletId: string; endUserId: string }, requestId: string) {
  await settled(testEnv);
  const [row] = await sql<{ calls: number; bookings: number }>(
    testEnv,
    `select (select count(*)::int from gateway_calls where client_request_id = $1 and status <> 'abandoned') as calls,
            (select count(*)::int from usage_events where client_request_id = $1) as bookings`,
    [requestId],
  );
  return {
    ...row!,
    held: formatUsd(await heldForCalls(testEnv, session)),
    reserved: formatUsd(await reservedForCalls(testEnv, session, credentialId)),
  };
}

describe('a custom server on the developer_key route', () => {
  it("with a feature price: held at the worst case × the price, called at the developer's root with its key, booked at the price", async () => {
    const session = await fundedSession(testEnv);
    let release: (response: Response) => void = () => undefined;
    let reached: () => void = () => undefined;
    const atUpstream = new Promise<void>((resolve) => (reached = resolve));
    const upstream = fakeUpstream(() => {
      reached();
      return new Promise<Response>((resolve) => (release = resolve));
    });
    const requestId = newRequestId();
    const inFlight = chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      {
        feature: 'custom_priced',
        model: 'custom:my-finetune',
        route_mode: 'developer_key',
        max_tokens: 50,
        messages: [userMessage('Capital of France?')],
      },
      requestId,
    );
    await atUpstream;
    // The hold while the server answers (the user's only call), within what the wallet holds.
    const held = await heldForCalls(testEnv, session);
    expect(compareUsd(parseWireAmount((await wallet(testEnv, session.walletId)).held), held)).toBeGreaterThanOrEqual(0);
    release(jsonResponse(openAiCompletion('Paris.', { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })));
    const response = await inFlight;
    expect(response.status).toBe(200);

    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]!.url).toBe(`${root}/chat/completions`);
    expect(upstream.requests[0]!.headers.authorization).toBe(`Bearer ${serverKey}`);
    expect((upstream.requests[0]!.body as { model: string }).model).toBe('my-finetune');

    // 18 tokens × 2 USD per million = 0.000036; the platform fee 10% of it; the server's cost unknown (0).
    const charge = ((await response.json()) as { faucet: { charge: { amount_usd: string; upstream_cost_usd?: string } } }).faucet.charge;
    expect(charge.amount_usd).toBe('0.00003600');
    await settled(testEnv);
    // The hold was the call's token bounds at the feature's 2 USD per million.
    const [bound] = await sql<{ tokens: number; bound_output_tokens: number }>(
      testEnv,
      `select bound_input_tokens + bound_output_tokens as tokens, bound_output_tokens from gateway_calls where client_request_id = $1`,
      [requestId],
    );
    expect(bound!.bound_output_tokens).toBe(50);
    expect(formatUsd(held)).toBe(formatUsd(priceTokensThenRound([[parseWireAmount('2.00000000'), BigInt(bound!.tokens)]], 'up')));
    expect(compareUsd(held, zeroUsd())).toBeGreaterThan(0);
    expect(await booked(requestId)).toEqual([
      {
        route_mode: 'developer_key',
        provider: 'custom',
        model: 'my-finetune',
        input_tokens: 11,
        output_tokens: 7,
        retail_usd: '0.00003600',
        upstream_cost_usd: '0.00000000',
        developer_revenue_usd: '0.00003240',
        platform_share_usd: '0.00000360',
        price_catalog_version: null,
        input_price_per_mtok_usd: null,
        provider_credential_id: credentialId,
        // The price the call was rated with, in its ledger transaction (and on its call record).
        feature_pricing: { feature_key: 'custom_priced', developer_price_per_mtok_usd: '2.00000000', open_fee_usd: '0.00000000' },
      },
    ]);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '0.99996400', held: '0.00000000', available: '0.99996400' });
    expect(await leftBehind(session, requestId)).toMatchObject({ held: '0.00000000', reserved: '0.00000000', bookings: 1 });

    // The key's budget counts no cost it cannot know.
    const keys = await send(testEnv, '/v1/developer/provider-keys', { method: 'GET', token: developerKey });
    expect(keys.body.data.find((key: { id: string }) => key.id === credentialId)).toMatchObject({ spent_this_month_usd: '0.00000000' });

    // The upstream audit, against what the server answered for the call (11 + 7 tokens).
    const [call_] = await sql<{ id: string }>(testEnv, 'select id::text from gateway_calls where client_request_id = $1', [requestId]);
    const { db, pool } = createDatabase(testEnv);
    try {
      const audit = await auditUpstreamCalls(db, [{ callId: call_!.id, inputTokens: 11, outputTokens: 7 }]);
      expect(audit).toMatchObject({ ok: true, unbilledCalls: 0, unbilledTokens: 0, doubleBilledCalls: 0 });
    } finally {
      await pool.end();
    }
  });

  it('streamed, with no route asked: the gateway picks the developer key and books the stream at the feature price', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() =>
      sseResponse(
        openAiSse([
          openAiChunk({ role: 'assistant', content: 'Par' }),
          openAiChunk({ content: 'is.' }, 'stop'),
          {
            id: 'x',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'my-finetune',
            choices: [],
            usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
          },
        ]),
      ),
    );
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { feature: 'custom_priced', model: 'custom:my-finetune', stream: true, max_tokens: 64, messages: [userMessage('hi')] },
      requestId,
    );
    expect(response.status).toBe(200);
    await response.text();
    expect(upstream.requests.map((request) => request.url)).toEqual([`${root}/chat/completions`]);
    await settled(testEnv);
    expect(await booked(requestId)).toMatchObject([
      { route_mode: 'developer_key', input_tokens: 20, output_tokens: 30, retail_usd: '0.00010000', upstream_cost_usd: '0.00000000' },
    ]);
  });

  it('a call the gateway never settled is booked by its wallet object at its bound × the feature price, upstream cost 0: never left unbilled', async () => {
    const session = await fundedSession(testEnv);
    const requestId = await neverSettled(testEnv, session.token);
    // Its deadline and grace pass: the wallet object that authorized it books it at its bound.
    const kept = await callsKeptBy(session.token);
    expect(kept).toHaveLength(1);
    await sweepCallNow(session.token, kept[0]!);
    await settled(testEnv);
    await expectBookedAtBound(requestId);
    expect(await leftBehind(session, requestId)).toMatchObject({ held: '0.00000000', reserved: '0.00000000', bookings: 1 });
  });

  it('without a feature price: 400 naming the setting, nothing sent, held, reserved or booked', async () => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    for (const feature of ['custom_unpriced', undefined]) {
      const requestId = newRequestId();
      const response = await chat(
        gatewayWith({ upstreamFetch: upstream.fetch }),
        testEnv,
        session.token,
        { ...(feature ? { feature } : {}), model: 'custom:my-finetune', route_mode: 'developer_key', messages: [userMessage('hi')] },
        requestId,
      );
      expect(response.status).toBe(400);
      const error = ((await response.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('invalid_request');
      expect(error.message).toMatch(/no catalog price.*developer_price_per_mtok_usd/);
      expect(await leftBehind(session, requestId)).toEqual({ calls: 0, held: '0.00000000', reserved: '0.00000000', bookings: 0 });
    }
    expect(upstream.requests).toEqual([]);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
  });

  it('the platform route stays refused, feature price or not; a user who cannot pay the hold gets 402; nothing sent', async () => {
    const upstream = answering();
    const session = await fundedSession(testEnv);
    const platform = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      feature: 'custom_priced',
      model: 'custom:my-finetune',
      route_mode: 'platform',
      messages: [userMessage('hi')],
    });
    expect(platform.status).toBe(400);
    expect(((await platform.json()) as { error: { code: string } }).error.code).toBe('invalid_request');

    const poor = await fundedSession(testEnv, '0.00000001');
    const broke = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, poor.token, {
      feature: 'custom_priced',
      model: 'custom:my-finetune',
      route_mode: 'developer_key',
      max_tokens: 1000,
      messages: [userMessage('hi')],
    });
    expect(broke.status).toBe(402);
    expect(((await broke.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    expect(upstream.requests).toEqual([]);
  });

  it("another developer's custom server is never reached: a call of the demo app uses only its own developer's key", async () => {
    const other = await createDeveloper(testEnv);
    const otherRoot = 'https://other-tenant.example.com/v1';
    const stored = await send(testEnv, '/v1/developer/provider-keys', {
      json: {
        provider: 'custom',
        api_key: `other-${randomToken('', 24).replace(/[^A-Za-z0-9]/g, 'x')}`,
        monthly_budget_usd: '1.00000000',
        base_url: otherRoot,
      },
      token: other.key,
    });
    expect(stored.status).toBe(201);
    // The demo developer's own custom key disabled: the other developer's is the only active one.
    expect((await send(testEnv, `/v1/developer/provider-keys/${credentialId}`, { method: 'DELETE', token: developerKey })).status).toBe(
      200,
    );
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { feature: 'custom_priced', model: 'custom:my-finetune', route_mode: 'developer_key', messages: [userMessage('hi')] },
      requestId,
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/needs an active key of the app's developer/);
    expect(upstream.requests).toEqual([]);
    expect(await leftBehind(session, requestId)).toEqual({ calls: 0, held: '0.00000000', reserved: '0.00000000', bookings: 0 });
  });

  it('the books reconcile and the upstream audit finds no paid call unbilled', async () => {
    await settled(testEnv);
    const ledger = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    expect(((await ledger.json()) as { ok: boolean }).ok).toBe(true);
    const audit = await call(api(), testEnv, '/v1/admin/reconciliation/upstream', { token: adminToken });
    expect((await audit.json()) as { ok: boolean; unbilled_calls: number }).toMatchObject({ ok: true, unbilled_calls: 0 });
  });
});
