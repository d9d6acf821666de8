/**
 * A call with fallbacks that the gateway never settled (docs/models.md, "Fallback and aliases"): its
 * record names the first candidate, but a fallback may have answered. The sweeper books it at the
 * costliest candidate its route could have tried, from the fallbacks recorded at authorization
 * (migration 0018): a cheap first model failing and an expensive fallback answering is never booked
 * at the cheap model's prices, and the upstream audit over the provider's per-attempt log and the
 * ledger reconciliation agree.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, type RecordedRequest } from '../../test/fake-upstream.ts';
import { fundedSession, gatewayWith, newRequestId, usageRows, userMessage, wallet } from '../../test/gateway-kit.ts';
import { api, call, createDatabase, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../test/harness.ts';
import { fakeOpenAiKey } from '../../test/provider-keys-kit.ts';
import { reconcileLedger } from '../ledger/reconcile.ts';
import { formatUsd } from '../money/index.ts';
import { rateUsage, ratingSettingsFor, type RouteMode } from '../rating/index.ts';
import { sweepStaleCalls } from './sweep-stale-calls.ts';
import { auditUpstreamCalls, type ReportedUpstreamCall } from './upstream-audit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', CALL_SETTLE_GRACE_SECONDS: '1' });
  const stored = await call(api(), testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
});

async function addFeature(featureKey: string, fallbacks: string[]) {
  await sql(
    testEnv,
    `insert into app_features (app_id, feature_key, name, default_model, fallback_models)
     select id, $1, $1, 'openai:gpt-4o-mini', $3 from apps where public_app_id = $2`,
    [featureKey, demoPublicAppId, JSON.stringify(fallbacks)],
  );
}

/**
 * A call whose first attempt (gpt-4o-mini) fails with a 500 and whose fallback's upstream takes the
 * request and never answers the gateway; the isolate is then lost (its promise is never awaited), so
 * nothing settles the call. Hands back its ids once the fallback's upstream has the request.
 */
async function fallbackLeftInFlight(token: string, body: Record<string, unknown>) {
  const upstream = fakeUpstream((request) =>
    (request.body as { model: string }).model === 'gpt-4o-mini'
      ? jsonResponse({ error: { message: 'overloaded' } }, 500)
      : new Promise<Response>(() => undefined),
  );
  const requestId = newRequestId();
  void Promise.resolve(
    gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', messages: [userMessage('write a long story')], max_tokens: 400, ...body }),
      }),
      testEnv,
      createExecutionContext(),
    ),
  ).catch(() => undefined);
  await expect.poll(() => upstream.requests.length).toBe(2);
  const [authorized] = await sql<{ id: string; route_mode: string; input: number; output: number; fallback_models: string[] | null }>(
    testEnv,
    `select id::text, route_mode, bound_input_tokens as input, bound_output_tokens as output, fallback_models
       from gateway_calls where client_request_id = $1`,
    [requestId],
  );
  await sql(testEnv, `update gateway_calls set deadline_at = now() - interval '1 hour' where client_request_id = $1`, [requestId]);
  return { requestId, authorized: authorized!, requests: upstream.requests };
}

async function withDatabase<T>(work: (db: ReturnType<typeof createDatabase>['db']) => Promise<T>): Promise<T> {
  const { db, pool } = createDatabase(testEnv);
  try {
    return await work(db);
  } finally {
    await pool.end();
  }
}

/** What the provider saw: the first attempt refused (no tokens), the fallback answered with `tokens` (it did the work). */
function providerLog(requests: RecordedRequest[], tokens: { input: number; output: number }): ReportedUpstreamCall[] {
  return requests.map((request, index) => ({
    callId: request.headers['x-client-request-id'] ?? '',
    inputTokens: index === 0 ? 0 : tokens.input,
    outputTokens: index === 0 ? 0 : tokens.output,
    failed: index === 0,
  }));
}

function retailAt(routeMode: RouteMode, provider: string, model: string, tokens: { input: number; output: number }): string {
  const rated = rateUsage(
    { routeMode, provider, model, inputTokens: tokens.input, outputTokens: tokens.output, estimated: true },
    {},
    ratingSettingsFor(testEnv, 5_000),
  );
  return formatUsd(rated.retailUsd);
}

describe('the sweeper books a call with fallbacks at its costliest candidate', () => {
  it('platform: a cheap first model failed, an expensive fallback answered, settlement lost: booked at the fallback (frozen at authorization)', async () => {
    const key = `swept_fb_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, ['openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, authorized, requests } = await fallbackLeftInFlight(session.token, { feature: key, route_mode: 'platform' });
    expect(authorized).toMatchObject({ route_mode: 'platform', fallback_models: ['openai:gpt-4o'] });
    expect(requests.map((request) => request.headers['x-client-request-id'])).toEqual([authorized.id, `${authorized.id}:1`]);
    // The developer drops the fallback afterwards: the call was authorized with it, and swept with it.
    await sql(testEnv, `update app_features set fallback_models = '[]' where feature_key = $1`, [key]);

    expect(await withDatabase((db) => sweepStaleCalls(db, testEnv))).toEqual({ booked: 1, abandoned: 0 });

    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o', estimated: true });
    const expensive = retailAt('platform', 'openai', 'gpt-4o', authorized);
    expect(row?.retail_usd).toBe(expensive);
    // At the first model's prices it would have been ~16x less: what the old sweeper booked.
    expect(Number(retailAt('platform', 'openai', 'gpt-4o-mini', authorized))).toBeLessThan(Number(expensive) / 10);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });

    // The provider billed the fallback for everything the call could have used; the failed first attempt nothing.
    const log = providerLog(requests, authorized);
    const audit = await withDatabase((db) => auditUpstreamCalls(db, log));
    expect(audit).toMatchObject({ ok: true, upstreamCalls: 2, unbilledCalls: 0, unbilledTokens: 0, doubleBilledCalls: 0 });
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('developer_key: only fallbacks of the reserved key provider count; a costlier one of another provider is never tried, never booked', async () => {
    const key = `swept_dk_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, ['anthropic:claude-sonnet-4-5', 'openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, authorized, requests } = await fallbackLeftInFlight(session.token, { feature: key, route_mode: 'developer_key' });
    expect(authorized.route_mode).toBe('developer_key');
    // The anthropic fallback had no key on this route: skipped, so the second request is gpt-4o.
    expect(requests.map((request) => (request.body as { model: string }).model)).toEqual(['gpt-4o-mini', 'gpt-4o']);
    expect(requests[1]?.headers['x-client-request-id']).toBe(`${authorized.id}:2`);

    expect(await withDatabase((db) => sweepStaleCalls(db, testEnv))).toEqual({ booked: 1, abandoned: 0 });
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o', estimated: true });
    expect(row?.retail_usd).toBe(retailAt('developer_key', 'openai', 'gpt-4o', authorized));
    const audit = await withDatabase((db) => auditUpstreamCalls(db, providerLog(requests, authorized)));
    expect(audit).toMatchObject({ ok: true, unbilledCalls: 0, unbilledTokens: 0 });
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('each candidate is booked within its own output cap: the call bound is the largest, set by a cheaper model', async () => {
    const key = `swept_cap_${crypto.randomUUID().slice(0, 6)}`;
    // gpt-4.1-nano publishes 32,768 output tokens, gpt-4o 16,384: with no max_tokens the call's output bound is 32,768.
    await addFeature(key, ['openai:gpt-4.1-nano', 'openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, authorized } = await fallbackLeftInFlight(session.token, {
      feature: key,
      route_mode: 'platform',
      max_tokens: undefined,
    });
    expect(authorized.output).toBe(32_768);
    const [{ hold } = { hold: '' }] = await sql<{ hold: string }>(
      testEnv,
      `select h.amount::numeric(20, 8)::text as hold from gateway_calls g join balance_holds h on h.request_id = g.money_key
        where g.client_request_id = $1`,
      [requestId],
    );

    expect(await withDatabase((db) => sweepStaleCalls(db, testEnv))).toEqual({ booked: 1, abandoned: 0 });
    const [row] = await usageRows(testEnv, requestId);
    // gpt-4o at its own 16,384 output tokens — what the hold covered — not at 32,768 it can never answer.
    const withinCap = retailAt('platform', 'openai', 'gpt-4o', { input: authorized.input, output: 16_384 });
    expect(row).toMatchObject({ model: 'gpt-4o', output_tokens: 16_384, retail_usd: withinCap });
    expect(Number(row?.retail_usd)).toBeLessThanOrEqual(Number(hold));
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('a call without fallbacks is swept at its own model, as before', async () => {
    const key = `swept_nf_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, []);
    const session = await fundedSession(testEnv, '5.00000000');
    const upstream = fakeUpstream(() => new Promise<Response>(() => undefined));
    const requestId = newRequestId();
    void Promise.resolve(
      gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
        new Request('http://faucet.test/v1/chat/completions', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
          body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: key, route_mode: 'platform', messages: [userMessage('hi')] }),
        }),
        testEnv,
        createExecutionContext(),
      ),
    ).catch(() => undefined);
    await expect.poll(() => upstream.requests.length).toBe(1);
    expect(await sql(testEnv, 'select fallback_models from gateway_calls where client_request_id = $1', [requestId])).toEqual([
      { fallback_models: [] },
    ]);
    await sql(testEnv, `update gateway_calls set deadline_at = now() - interval '1 hour' where client_request_id = $1`, [requestId]);
    expect(await withDatabase((db) => sweepStaleCalls(db, testEnv))).toEqual({ booked: 1, abandoned: 0 });
    expect((await usageRows(testEnv, requestId))[0]).toMatchObject({ model: 'gpt-4o-mini', estimated: true });
  });
});
