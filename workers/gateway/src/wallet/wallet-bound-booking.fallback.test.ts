/**
 * A call with fallbacks the gateway never settled (docs/models.md, "Fallback and aliases"): its record
 * names the first candidate, but a fallback may have answered. Its wallet object books it at the
 * costliest candidate its route could have tried, from the candidates it kept at authorization: a
 * cheap first model failing and an expensive fallback answering is never booked at the cheap model's
 * prices, each candidate within its own output cap, and the upstream audit over the provider's
 * per-attempt log and the ledger reconciliation agree.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditUpstreamCalls, type ReportedUpstreamCall } from '#shared/calls/upstream-audit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { formatUsd } from '#shared/money/index.ts';
import { rateUsage, ratingSettingsFor, type RouteMode } from '#shared/rating/index.ts';
import { fakeUpstream, jsonResponse, type RecordedRequest } from '../../../test/fake-upstream.ts';
import {
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { api, call, createDatabase, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';
import { callsKeptBy, keptCall, sweepCallNow } from '../../../test/wallet-kit.ts';
import { usdString } from './lease-book.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    CALL_SETTLE_GRACE_SECONDS: '1',
    // Booked at the candidates' worst cases: a quota step larger than any bound here grants the whole
    // bound at once, as a call that cannot be cut is held (docs/quota.md).
    QUOTA_STEP_TOKENS: '65536',
  });
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
 * A call whose first attempt (gpt-4o-mini) fails with a 500 and whose later attempts' upstream takes
 * the request and never answers the gateway; the isolate is then lost (its promise is never awaited),
 * so nothing settles the call. Hands back the call its wallet object keeps once `attempts` requests
 * reached the upstream.
 */
async function leftInFlight(token: string, body: Record<string, unknown>, attempts = 2) {
  const upstream = fakeUpstream((request) =>
    (request.body as { model: string }).model === 'gpt-4o-mini' && attempts > 1
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
  await expect.poll(() => upstream.requests.length).toBe(attempts);
  const [callId, ...others] = await callsKeptBy(token);
  expect(others).toEqual([]);
  const kept = await keptCall(token, callId!);
  return { requestId, callId: callId!, kept, requests: upstream.requests };
}

/** Its deadline and grace pass: the wallet object books it at its bound, and the ledger has it. */
async function sweep(token: string, callId: string) {
  await sweepCallNow(token, callId);
  await settled(testEnv);
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

/** The worst-case tokens the call kept for a candidate (its own bounds), by model. */
function boundsOf(kept: Awaited<ReturnType<typeof keptCall>>, model: string) {
  const candidate = kept.rating.candidates.find((each) => each.model === model);
  if (candidate === undefined) throw new Error(`the call kept no candidate ${model}`);
  return { input: candidate.boundInputTokens, output: candidate.boundOutputTokens };
}

describe('a call with fallbacks never settled is booked by its wallet object at its costliest candidate', () => {
  it('platform: a cheap first model failed, an expensive fallback answered, settlement lost: booked at the fallback (kept at authorization)', async () => {
    const key = `swept_fb_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, ['openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, callId, kept, requests } = await leftInFlight(session.token, { feature: key, route_mode: 'platform' });
    expect(kept.record).toMatchObject({ route_mode: 'platform', fallback_models: ['openai:gpt-4o'] });
    expect(requests.map((request) => request.headers['x-client-request-id'])).toEqual([callId, `${callId}:1`]);
    // The developer drops the fallback afterwards: the call was authorized with it, and swept with it.
    await sql(testEnv, `update app_features set fallback_models = '[]' where feature_key = $1`, [key]);

    await sweep(session.token, callId);

    const [row, ...others] = await usageRows(testEnv, requestId);
    expect(others).toEqual([]);
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o', estimated: true });
    const tokens = boundsOf(kept, 'gpt-4o');
    const expensive = retailAt('platform', 'openai', 'gpt-4o', tokens);
    expect(row?.retail_usd).toBe(expensive);
    // At the first model's prices it would have been ~16x less.
    expect(Number(retailAt('platform', 'openai', 'gpt-4o-mini', tokens))).toBeLessThan(Number(expensive) / 10);
    expect(Number(row?.retail_usd)).toBeLessThanOrEqual(Number(usdString(kept.reservedUnits)));
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });

    // The provider billed the fallback for everything the call could have used; the failed first attempt nothing.
    const audit = await withDatabase((db) => auditUpstreamCalls(db, providerLog(requests, tokens)));
    expect(audit).toMatchObject({ ok: true, upstreamCalls: 2, unbilledCalls: 0, unbilledTokens: 0, doubleBilledCalls: 0 });
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('developer_key: only fallbacks of the reserved key provider count; a costlier one of another provider is never tried, never booked', async () => {
    const key = `swept_dk_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, ['anthropic:claude-sonnet-4-5', 'openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, callId, kept, requests } = await leftInFlight(session.token, { feature: key, route_mode: 'developer_key' });
    expect(kept.record.route_mode).toBe('developer_key');
    // The anthropic fallback had no key on this route: skipped, so the second request is gpt-4o.
    expect(requests.map((request) => (request.body as { model: string }).model)).toEqual(['gpt-4o-mini', 'gpt-4o']);
    expect(requests[1]?.headers['x-client-request-id']).toBe(`${callId}:2`);
    // Had it been booked, claude-sonnet-4-5 would cost more than gpt-4o.
    const tokens = boundsOf(kept, 'gpt-4o');
    expect(Number(retailAt('developer_key', 'anthropic', 'claude-sonnet-4-5', tokens))).toBeGreaterThan(
      Number(retailAt('developer_key', 'openai', 'gpt-4o', tokens)),
    );

    await sweep(session.token, callId);
    const [row, ...others] = await usageRows(testEnv, requestId);
    expect(others).toEqual([]);
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o', estimated: true });
    expect(row?.retail_usd).toBe(retailAt('developer_key', 'openai', 'gpt-4o', tokens));
    const audit = await withDatabase((db) => auditUpstreamCalls(db, providerLog(requests, tokens)));
    expect(audit).toMatchObject({ ok: true, unbilledCalls: 0, unbilledTokens: 0 });
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('each candidate is booked within its own output cap: the call bound is the largest, set by a cheaper model', async () => {
    const key = `swept_cap_${crypto.randomUUID().slice(0, 6)}`;
    // gpt-4.1-nano publishes 32,768 output tokens, gpt-4o 16,384: with no max_tokens the call's output bound is 32,768.
    await addFeature(key, ['openai:gpt-4.1-nano', 'openai:gpt-4o']);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, callId, kept } = await leftInFlight(session.token, { feature: key, route_mode: 'platform', max_tokens: undefined });
    expect(kept.record.bound_output_tokens).toBe(32_768);

    await sweep(session.token, callId);
    const [row] = await usageRows(testEnv, requestId);
    // gpt-4o at its own 16,384 output tokens — what the hold covered — not at 32,768 it can never answer.
    const withinCap = retailAt('platform', 'openai', 'gpt-4o', { input: boundsOf(kept, 'gpt-4o').input, output: 16_384 });
    expect(row).toMatchObject({ model: 'gpt-4o', output_tokens: 16_384, retail_usd: withinCap });
    expect(Number(row?.retail_usd)).toBeLessThanOrEqual(Number(usdString(kept.reservedUnits)));
    expect((await withDatabase(reconcileLedger)).ok).toBe(true);
  });

  it('a call without fallbacks is booked at its own model', async () => {
    const key = `swept_nf_${crypto.randomUUID().slice(0, 6)}`;
    await addFeature(key, []);
    const session = await fundedSession(testEnv, '5.00000000');
    const { requestId, callId, kept } = await leftInFlight(session.token, { feature: key, route_mode: 'platform' }, 1);
    expect(kept.record.fallback_models).toEqual([]);
    expect(kept.rating.candidates.map((candidate) => candidate.model)).toEqual(['gpt-4o-mini']);

    await sweep(session.token, callId);
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ model: 'gpt-4o-mini', estimated: true });
    expect(row?.retail_usd).toBe(retailAt('platform', 'openai', 'gpt-4o-mini', boundsOf(kept, 'gpt-4o-mini')));
  });
});
