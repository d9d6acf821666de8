import { beforeAll, describe, expect, it } from 'vitest';
import { call, createSession, sql, type TestEnv } from '../../../test/harness.ts';
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
  wallet,
} from '../../../test/gateway-kit.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', UPSTREAM_TIMEOUT_MS: '50' });
});

const hello = { model: 'mock:echo', feature: 'chat', messages: [userMessage('hello')] };

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  return { status: response.status, ...body.error };
}

/** An upstream that must not be reached. */
function forbiddenUpstream() {
  return fakeUpstream(() => {
    throw new Error('the upstream must not be called');
  });
}

describe('authentication', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a token of the wrong shape', 'not-a-session-token'],
    ['an unknown session token', `fvs_${'A'.repeat(43)}`],
  ])('answers %s with 401 whatever the body (an invalid one included), never 400', async (_case, token) => {
    const smuggled = { ...hello, model: 'openai:gpt-4o-mini', service_tier: 'priority' };
    for (const body of [
      { ...hello, messages: [] },
      { model: 'nope' },
      'not json',
      { ...hello, model: 'unknown:model' },
      smuggled,
      { ...hello, route_mode: 'local' },
    ]) {
      const response = await call(gatewayWith({ upstreamFetch: forbiddenUpstream().fetch }), testEnv, '/v1/chat/completions', {
        ...(typeof body === 'string' ? { method: 'POST', body, headers: { 'content-type': 'application/json' } } : { json: body }),
        ...(token ? { token } : {}),
      });
      expect(await errorOf(response)).toMatchObject({ status: 401, code: 'unauthorized' });
    }
  });

  it('answers a live session with an invalid body 400, naming the field', async () => {
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, messages: [] });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it.each([
    ['no Authorization header', undefined],
    ['a token of the wrong shape', 'not-a-session-token'],
    ['an unknown session token', `fvs_${'A'.repeat(43)}`],
  ])('refuses %s with 401 unauthorized', async (_case, token) => {
    const upstream = forbiddenUpstream();
    const response = await call(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, '/v1/chat/completions', {
      json: hello,
      ...(token ? { token } : {}),
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(upstream.requests).toEqual([]);
  });

  it('refuses a live session whose token is of the older form (no wallet part) with 401 saying to mint a new one, nothing sent or held', async () => {
    const session = await fundedSession(testEnv);
    // A live session stored under a token of the form before tokens named their wallet.
    const oldToken = `fvs_${crypto.randomUUID().replace(/-/g, '')}${crypto.randomUUID().replace(/-/g, '')}`;
    await sql(testEnv, `update virtual_sessions set token_hash = encode(sha256($1::bytea), 'hex') where end_user_id = $2`, [
      oldToken,
      session.endUserId,
    ]);
    const upstream = forbiddenUpstream();
    const requestId = newRequestId();
    const response = await call(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, '/v1/chat/completions', {
      json: hello,
      token: oldToken,
      headers: { 'x-request-id': requestId },
    });
    const refused = await errorOf(response);
    expect(refused).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(refused.message).toContain('mint a new session');
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });

  it('refuses an expired session with 401 and places no hold', async () => {
    const session = await fundedSession(testEnv);
    await sql(testEnv, `update virtual_sessions set expires_at = now() - interval '1 second' where end_user_id = $1`, [session.endUserId]);
    const requestId = newRequestId();
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(await errorOf(response)).toMatchObject({ status: 401, code: 'unauthorized' });
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });
});

describe('request validation', () => {
  it.each([
    ['no model', { feature: 'chat', messages: [userMessage('hi')] }],
    // A bare name resolves to its default provider (gpt-4o-mini → openai); one without a default is refused.
    ['a bare model name without a default provider', { ...hello, model: 'llama-3-70b' }],
    ['an empty feature', { model: 'mock:echo', feature: '', messages: [userMessage('hi')] }],
    ['a feature the app does not have', { ...hello, feature: 'nope' }],
    ['no messages', { model: 'mock:echo', feature: 'chat', messages: [] }],
    ['a message with an unknown role', { ...hello, messages: [{ role: 'robot', content: 'hi' }] }],
    ['max_tokens as a string', { ...hello, max_tokens: '10' }],
    ['n above 1', { ...hello, n: 2 }],
    ['an unknown route_mode', { ...hello, route_mode: 'free' }],
    ['an unknown provider', { ...hello, model: 'acme:large' }],
    ['a model the mock does not have', { ...hello, model: 'mock:gpt-5' }],
  ])('refuses %s with 400 invalid_request', async (_case, body) => {
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith(), testEnv, session.token, body);
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses a body that is not JSON with 400, not 500', async () => {
    const session = await fundedSession(testEnv);
    const response = await call(gatewayWith(), testEnv, '/v1/chat/completions', {
      method: 'POST',
      body: '{"model": ',
      token: session.token,
      headers: { 'content-type': 'application/json' },
    });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses a feature the app does not have', async () => {
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, feature: 'no-such-feature' });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses route_mode local with a message pointing at the bridge', async () => {
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, route_mode: 'local' });
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(error.message).toMatch(/bridge/);
  });

  it('refuses route_mode byok without an active key of the user, never falling back to a paid route', async () => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, route_mode: 'byok' }, requestId);
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });

  it('refuses a model that has no platform price on the platform route', async () => {
    const upstream = forbiddenUpstream();
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      ...hello,
      model: 'openai:gpt-unpriced',
    });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(upstream.requests).toEqual([]);
  });
});

describe('balance', () => {
  it('refuses a user with zero balance with 402 and never calls the upstream', async () => {
    const upstream = forbiddenUpstream();
    const session = await createSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { ...hello, model: 'openai:gpt-4o-mini' },
      requestId,
    );
    expect(await errorOf(response)).toMatchObject({ status: 402, code: 'insufficient_balance' });
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });

  it('refuses a call whose worst case exceeds the available balance, even if the actual cost would fit', async () => {
    const session = await fundedSession(testEnv, '0.00010000');
    // No max_tokens: the hold is the model's full output cap, far above 0.0001 USD.
    const response = await chat(gatewayWith(), testEnv, session.token, hello);
    expect(await errorOf(response)).toMatchObject({ status: 402, code: 'insufficient_balance' });
    const response2 = await chat(gatewayWith(), testEnv, session.token, { ...hello, max_tokens: 10 });
    expect(response2.status).toBe(200);
  });
});

describe('upstream failures', () => {
  const failures: Array<[string, FetchFunction, number, string]> = [
    ['answers 500', fakeUpstream(() => jsonResponse({ error: { message: 'internal' } }, 500)).fetch, 502, 'upstream_error'],
    ['is unreachable', () => Promise.reject(new TypeError('network down')), 502, 'upstream_error'],
    ['answers garbage', fakeUpstream(() => new Response('<html>oops</html>', { status: 200 })).fetch, 502, 'upstream_error'],
  ];

  it.each(failures)('when the upstream %s: the envelope, the hold released, nothing charged', async (_case, fetch, status, code) => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: fetch }),
      testEnv,
      session.token,
      { ...hello, model: 'openai:gpt-4o-mini' },
      requestId,
    );
    expect(await errorOf(response)).toMatchObject({ status, code, request_id: requestId });
    // Released: once settled, nothing of the call is held or booked and the balance is whole.
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
  });

  it('when the upstream never answers: the 504 envelope, and the call billed at its bound (the provider had the request and may be generating)', async () => {
    const hang: FetchFunction = (request) =>
      new Promise((_resolve, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: hang }),
      testEnv,
      session.token,
      { ...hello, model: 'openai:gpt-4o-mini', max_tokens: 40 },
      requestId,
    );
    expect(await errorOf(response)).toMatchObject({ status: 504, code: 'upstream_timeout', request_id: requestId });
    await settled(testEnv);
    // Booked, and its worst case no longer held.
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: 40 });
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
    // A retry is refused: the timed-out call was billed, and retrying it must not be billed again.
    expect(
      (await chat(gatewayWith({ upstreamFetch: hang }), testEnv, session.token, { ...hello, model: 'openai:gpt-4o-mini' }, requestId))
        .status,
    ).toBe(409);
  });

  it('passes an upstream rate limit on as 429 with its retry-after', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ error: { message: 'slow down' } }, 429, { 'retry-after': '7' }));
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      ...hello,
      model: 'openai:gpt-4o-mini',
    });
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await errorOf(response)).toMatchObject({ status: 429, code: 'rate_limited' });
  });
});

describe('request ids', () => {
  it('never charges a request id twice: a repeated x-request-id is refused with 409 before any upstream call', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('once')));
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const body = { ...hello, model: 'openai:gpt-4o-mini', max_tokens: 10 };
    expect((await chat(app, testEnv, session.token, body, requestId)).status).toBe(200);
    await settled(testEnv);
    const afterFirst = await wallet(testEnv, session.walletId);

    const again = await chat(app, testEnv, session.token, body, requestId);
    expect(await errorOf(again)).toMatchObject({ status: 409, code: 'conflict' });
    expect(upstream.requests).toHaveLength(1);
    await settled(testEnv);
    expect(await wallet(testEnv, session.walletId)).toEqual(afterFirst);
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
  });

  it("treats another user's request id as that user's own call: neither blocks nor touches the other's booking", async () => {
    const first = await fundedSession(testEnv);
    const second = await fundedSession(testEnv);
    const requestId = newRequestId();
    expect((await chat(gatewayWith(), testEnv, first.token, { ...hello, max_tokens: 10 }, requestId)).status).toBe(200);
    await settled(testEnv);
    const firstAfter = await wallet(testEnv, first.walletId);
    const secondBefore = await wallet(testEnv, second.walletId);
    const response = await chat(gatewayWith(), testEnv, second.token, { ...hello, max_tokens: 10 }, requestId);
    expect(response.status).toBe(200);
    await settled(testEnv);
    expect(await wallet(testEnv, first.walletId)).toEqual(firstAfter);
    expect((await wallet(testEnv, second.walletId)).balance).not.toBe(secondBefore.balance);
    expect(await usageRows(testEnv, requestId)).toHaveLength(2);
  });
});
