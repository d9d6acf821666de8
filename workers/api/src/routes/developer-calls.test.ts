/**
 * The request log, as a developer asks it "what happened to this end user's call": calls made
 * through the gateway (answered, failed upstream, on each surface) are found by request id, by
 * user_ref and by the developer's own user id, with exactly the tokens and charge the call was
 * booked with, its timings and its error; another developer finds none of them; the cron deletes
 * details past the app's retention and never a usage record.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '#shared/db.ts';
import { deleteExpiredCallLog } from '#shared/calls/list-calls.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, type FakeUpstream } from '../../../test/fake-upstream.ts';
import { fundedSession, gatewayTestEnv, gatewayWith, newRequestId, settled } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { expectBooksAgree } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
let otherKey: string;
type Body = Record<string, any>;

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
  const onboarded = await call(api(), testEnv, '/v1/admin/developers', {
    json: { name: 'Rival', email: 'rival@example.test' },
    token: adminToken,
  });
  otherKey = ((await onboarded.json()) as Body).key.api_key;
});

const get = async (path: string, token = developerKey) => {
  const response = await call(api(), testEnv, path, { token });
  return { status: response.status, body: (await response.json()) as Body };
};

/** A call as a client makes it, kept alive until its work under waitUntil is done. */
async function post(upstream: FakeUpstream, path: string, body: unknown, headers: Record<string, string>) {
  const ctx = createExecutionContext();
  const response = await gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
    new Request(`http://faucet.test${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
    testEnv,
    ctx,
  );
  await response.text();
  await waitOnExecutionContext(ctx);
  return response;
}

const ask = { model: 'openai:gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 50 };

describe('GET /v1/developer/calls', () => {
  it('finds an answered call by its request id, with the tokens and charge it was booked with and its timings', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    const requestId = newRequestId();
    const answer = await post(upstream, '/v1/chat/completions', ask, {
      authorization: `Bearer ${session.token}`,
      'x-request-id': requestId,
    });
    expect(answer.status).toBe(200);
    const callId = answer.headers.get('x-faucet-call-id');
    await settled(testEnv);

    const page = await get(`/v1/developer/calls?request_id=${requestId}`);
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    const [booked] = await sql<{ retail_usd: string; upstream_cost_usd: string; developer_revenue_usd: string }>(
      testEnv,
      'select retail_usd::text, upstream_cost_usd::text, developer_revenue_usd::text from usage_events where client_request_id = $1',
      [requestId],
    );
    expect(page.body.data[0]).toMatchObject({
      id: callId,
      request_id: requestId,
      app: demoPublicAppId,
      user_ref: session.userRef,
      surface: 'chat.completions',
      requested_model: 'openai:gpt-4o-mini',
      provider: 'openai',
      model: 'gpt-4o-mini',
      route_mode: 'platform',
      outcome: 'answered',
      error_code: null,
      stream: false,
      estimated: false,
      input_tokens: 11,
      output_tokens: 7,
      charge_usd: booked!.retail_usd,
    });

    const detail = await get(`/v1/developer/calls/${callId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.tokens).toEqual({
      input: 11,
      cached_input: 0,
      cache_write: 0,
      audio_input: 0,
      output: 7,
      reasoning: 0,
      audio_output: 0,
    });
    expect(detail.body.money).toMatchObject({
      currency: 'USD',
      retail_usd: booked!.retail_usd,
      upstream_cost_usd: booked!.upstream_cost_usd,
      developer_revenue_usd: booked!.developer_revenue_usd,
    });
    expect(detail.body.timings.authorize_ms).toBeGreaterThanOrEqual(0);
    expect(detail.body.timings.total_ms).toBeGreaterThanOrEqual(detail.body.timings.authorize_ms);
    // Nothing of what was said is kept or shown.
    expect(JSON.stringify(detail.body)).not.toContain('Say hello');
    expect(JSON.stringify(detail.body)).not.toContain('hello"');
    await expectBooksAgree(testEnv, upstream.requests, () => ({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }));
  });

  it('shows a call the provider refused: upstream_error with its code and message, nothing billed', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse({ error: { message: 'overloaded' } }, 500));
    const requestId = newRequestId();
    const answer = await post(upstream, '/v1/chat/completions', ask, {
      authorization: `Bearer ${session.token}`,
      'x-request-id': requestId,
    });
    expect(answer.status).toBeGreaterThanOrEqual(500);
    await settled(testEnv);
    const page = await get(`/v1/developer/calls?request_id=${requestId}&outcome=upstream_error`);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0]).toMatchObject({ outcome: 'upstream_error', estimated: null, charge_usd: null });
    expect(page.body.data[0].error_code).toMatch(/^upstream_/);
    const detail = await get(`/v1/developer/calls/${page.body.data[0].id}`);
    expect(detail.body.error_message).toEqual(expect.any(String));
    expect(detail.body.money).toBeNull();
    expect(await sql(testEnv, 'select 1 from usage_events where client_request_id = $1', [requestId])).toEqual([]);
  });

  it('shows a call the wallet refused (no money left): refused with its code, nothing sent or billed', async () => {
    const session = await fundedSession(testEnv, '0.00000000');
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    const requestId = newRequestId();
    const answer = await post(
      upstream,
      '/v1/responses',
      { model: 'openai:gpt-4o-mini', input: 'Say hello' },
      {
        authorization: `Bearer ${session.token}`,
        'x-request-id': requestId,
      },
    );
    expect(answer.status).toBe(402);
    await settled(testEnv);
    const page = await get(`/v1/developer/calls?user_ref=${session.userRef}&outcome=refused`);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0]).toMatchObject({
      request_id: requestId,
      surface: 'responses',
      outcome: 'refused',
      error_code: 'insufficient_balance',
      charge_usd: null,
    });
    expect(upstream.requests).toEqual([]);
  });

  it('finds an end user’s calls by user_ref and by the developer’s own id for them, on each surface they used', async () => {
    const externalId = `customer-${crypto.randomUUID()}`;
    const session = await fundedSession(testEnv, '1.00000000', externalId);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    await post(upstream, '/v1/chat/completions', ask, { authorization: `Bearer ${session.token}`, 'x-request-id': newRequestId() });
    await post(
      upstream,
      '/v1/messages',
      { model: 'openai:gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello' }] },
      { 'x-api-key': session.token, 'anthropic-version': '2023-06-01', 'x-request-id': newRequestId() },
    );
    await settled(testEnv);
    const byRef = await get(`/v1/developer/calls?user_ref=${session.userRef}`);
    expect(byRef.body.data.map((row: Body) => row.surface)).toEqual(['messages', 'chat.completions']);
    const byOwnId = await get(`/v1/developer/calls?app=${demoPublicAppId}&external_user_id=${encodeURIComponent(externalId)}`);
    expect(byOwnId.body.data.map((row: Body) => row.id)).toEqual(byRef.body.data.map((row: Body) => row.id));
    const messagesOnly = await get(`/v1/developer/calls?user_ref=${session.userRef}&surface=messages`);
    expect(messagesOnly.body.data).toHaveLength(1);
    // A page of one, then the next: neither repeats nor skips.
    const first = await get(`/v1/developer/calls?user_ref=${session.userRef}&limit=1`);
    const second = await get(`/v1/developer/calls?user_ref=${session.userRef}&limit=1&cursor=${first.body.next_cursor}`);
    expect([first.body.data[0].id, second.body.data[0].id]).toEqual(byRef.body.data.map((row: Body) => row.id));
    expect(second.body.next_cursor).toBeNull();
    await expectBooksAgree(testEnv, upstream.requests, () => ({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }));
  });

  it('never shows another developer’s calls: their list is empty, the call and the app are 404', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    const requestId = newRequestId();
    const answer = await post(upstream, '/v1/chat/completions', ask, {
      authorization: `Bearer ${session.token}`,
      'x-request-id': requestId,
    });
    await settled(testEnv);
    const callId = answer.headers.get('x-faucet-call-id');
    expect((await get(`/v1/developer/calls?request_id=${requestId}`, otherKey)).body.data).toEqual([]);
    expect((await get(`/v1/developer/calls?user_ref=${session.userRef}`, otherKey)).body.data).toEqual([]);
    expect((await get(`/v1/developer/calls/${callId}`, otherKey)).status).toBe(404);
    expect((await get(`/v1/developer/calls?app=${demoPublicAppId}`, otherKey)).status).toBe(404);
  });

  it.each([
    ['a malformed cursor', 'cursor=nope'],
    ['an unknown outcome', 'outcome=maybe'],
    ['a range that ends before it starts', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z'],
    ['an external user id without its app', 'external_user_id=someone'],
    ['a limit above 100', 'limit=101'],
  ])('refuses %s with 400 in the envelope', async (_case, query) => {
    const refused = await get(`/v1/developer/calls?${query}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request' });
  });
});

describe('GET /v1/developer/calls/stats', () => {
  /**
   * percentile_cont as PostgreSQL computes it (float8, linear between the nearest ranks), then rounded
   * to one decimal as `round(…::numeric, 1)` does: the cast keeps 15 significant digits, then half up.
   */
  const percentile = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = p * (sorted.length - 1);
    const low = sorted[Math.floor(at)]!;
    const high = sorted[Math.ceil(at)]!;
    const value = Number((low + (high - low) * (at - Math.floor(at))).toPrecision(15));
    return Math.round(Number((value * 10).toPrecision(15))) / 10;
  };

  it('counts a local day’s calls, errors by outcome and latency p50/p95 from calls made through the gateway', async () => {
    const requestIds = [newRequestId(), newRequestId(), newRequestId()];
    const answered = await fundedSession(testEnv);
    await post(
      fakeUpstream(() => jsonResponse(openAiCompletion('hello'))),
      '/v1/chat/completions',
      ask,
      {
        authorization: `Bearer ${answered.token}`,
        'x-request-id': requestIds[0]!,
      },
    );
    await post(
      fakeUpstream(() => jsonResponse({ error: { message: 'overloaded' } }, 500)),
      '/v1/chat/completions',
      ask,
      {
        authorization: `Bearer ${answered.token}`,
        'x-request-id': requestIds[1]!,
      },
    );
    const broke = await fundedSession(testEnv, '0.00000000');
    await post(
      fakeUpstream(() => jsonResponse(openAiCompletion('hello'))),
      '/v1/chat/completions',
      ask,
      {
        authorization: `Bearer ${broke.token}`,
        'x-request-id': requestIds[2]!,
      },
    );
    await settled(testEnv);
    // Moved to 23:30 on 7 March in New York (4:30 on 8 March in UTC), a day no other call of this file is on.
    const rows = await sql<{ outcome: string; total_ms: number | null }>(
      testEnv,
      `update gateway_call_log set created_at = '2026-03-08T04:30:00Z' where client_request_id = any($1) returning outcome, total_ms`,
      [requestIds],
    );
    expect(rows.map((row) => row.outcome).sort()).toEqual(['answered', 'refused', 'upstream_error']);
    const timed = rows.flatMap((row) => (row.total_ms === null ? [] : [row.total_ms]));
    expect(timed.length).toBeGreaterThan(0);

    const newYork = await get(`/v1/developer/calls/stats?from=2026-03-06&to=2026-03-08&tz=America/New_York&app=${demoPublicAppId}`);
    expect(newYork.status).toBe(200);
    const quiet = { calls: 0, errors: 0, upstream_errors: 0, refused: 0, cut: 0, p50_ms: null, p95_ms: null };
    expect(newYork.body).toEqual({
      from: '2026-03-06',
      to: '2026-03-08',
      tz: 'America/New_York',
      data: [
        { day: '2026-03-06', ...quiet },
        {
          day: '2026-03-07',
          calls: 3,
          errors: 2,
          upstream_errors: 1,
          refused: 1,
          cut: 0,
          p50_ms: percentile(timed, 0.5),
          p95_ms: percentile(timed, 0.95),
        },
        { day: '2026-03-08', ...quiet },
      ],
    });
    // The same calls in UTC are on the 8th; without app, every app of the developer counts.
    const utc = await get('/v1/developer/calls/stats?from=2026-03-07&to=2026-03-08');
    expect(utc.body.tz).toBe('UTC');
    expect(utc.body.data.map((day: Body) => [day.day, day.calls, day.errors])).toEqual([
      ['2026-03-07', 0, 0],
      ['2026-03-08', 3, 2],
    ]);
    // Another developer sees none of them, and the app as one that does not exist.
    const other = await get('/v1/developer/calls/stats?from=2026-03-07&to=2026-03-08', otherKey);
    expect(other.body.data.map((day: Body) => day.calls)).toEqual([0, 0]);
    const named = await get(`/v1/developer/calls/stats?from=2026-03-07&to=2026-03-08&app=${demoPublicAppId}`, otherKey);
    expect(named.status).toBe(404);
    expect(named.body.error).toMatchObject({ code: 'not_found' });
  });

  it.each([
    ['a range that ends before it starts', 'from=2026-03-08&to=2026-03-07'],
    ['a range over 90 days', 'from=2026-01-01&to=2026-04-01'],
    ['a day that is not a date', 'from=2026-02-30&to=2026-03-01'],
    ['an instant instead of a day', 'from=2026-03-01T00:00:00Z&to=2026-03-02'],
    ['no range', 'tz=UTC'],
    ['an unknown time zone', 'from=2026-03-01&to=2026-03-02&tz=Mars/Olympus'],
  ])('refuses %s with 400 in the envelope', async (_case, query) => {
    const refused = await get(`/v1/developer/calls/stats?${query}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request' });
  });

  it('is described in the OpenAPI document, with its query and its 400 and 404', async () => {
    const response = await call(api(), testEnv, '/openapi.json');
    const document = (await response.json()) as Body;
    const stats = document.paths['/v1/developer/calls/stats'].get;
    expect(stats.parameters.map((parameter: Body) => parameter.name).sort()).toEqual(['app', 'from', 'to', 'tz']);
    expect(Object.keys(stats.responses)).toEqual(expect.arrayContaining(['200', '400', '404']));
    expect(Object.keys(document.components.schemas.CallStatsDay.properties)).toEqual([
      'day',
      'calls',
      'errors',
      'upstream_errors',
      'refused',
      'cut',
      'p50_ms',
      'p95_ms',
    ]);
  });

  it('takes 90 days, the longest range', async () => {
    const longest = await get('/v1/developer/calls/stats?from=2026-01-01&to=2026-03-31');
    expect(longest.status).toBe(200);
    expect(longest.body.data).toHaveLength(90);
  });
});

describe('retention', () => {
  it('deletes call details past the app’s retention, keeping newer ones and every usage record', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    const oldId = newRequestId();
    const newId = newRequestId();
    await post(upstream, '/v1/chat/completions', ask, { authorization: `Bearer ${session.token}`, 'x-request-id': oldId });
    await post(upstream, '/v1/chat/completions', ask, { authorization: `Bearer ${session.token}`, 'x-request-id': newId });
    await settled(testEnv);
    await sql(testEnv, `update gateway_call_log set created_at = now() - interval '31 days' where client_request_id = $1`, [oldId]);
    const { db, pool } = createDatabase(testEnv);
    try {
      expect(await deleteExpiredCallLog(db)).toBeGreaterThanOrEqual(1);
    } finally {
      await pool.end();
    }
    expect((await get(`/v1/developer/calls?request_id=${oldId}`)).body.data).toEqual([]);
    expect((await get(`/v1/developer/calls?request_id=${newId}`)).body.data).toHaveLength(1);
    // Usage records are money: both calls' stay.
    expect(await sql(testEnv, 'select 1 from usage_events where client_request_id = any($1)', [[oldId, newId]])).toHaveLength(2);
  });
});
