/**
 * The app's per-end-user limits at the gateway (docs/gateway.md, "Per-end-user limits"): spend per
 * UTC day and month (booked retail + worst case in flight + this call ≤ limit, else 402
 * budget_exceeded) and requests per minute (sliding 60 s window, else 429 with retry-after), enforced
 * when the call is authorized (on the wallet object's lease, whose room Postgres grants within the
 * limits), race-free, and nothing held, booked or sent upstream on refusal.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { addUsd, formatUsd, multiplyByRatio, type Usd } from '#shared/money/index.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { worstCaseInputTokens } from '../metering/worst-case-tokens.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { parseModel } from '../routing/parse-model.ts';
import { createDatabase, observeStatements } from '#shared/db.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, type RecordedRequest } from '../../../test/fake-upstream.ts';
import {
  chat,
  fund,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  settled,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { walletObjectOf } from '../../../test/wallet-kit.ts';
import { endUserSpend, limitedApp, type LimitedSession } from '../../../test/limits-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const model = 'openai:gpt-4o-mini';
const maxTokens = 40;
const ask = (content: string) => ({ model, max_tokens: maxTokens, messages: [userMessage(content)] });
const reference = parseModel(model);
const sent = (content: string): ChatRequest => ({ max_tokens: maxTokens, messages: [userMessage(content)], model: reference.model });
/** The worst-case retail of `ask(content)` on the platform route: its hold. */
const worstCase = (content = 'hello'): Usd => holdBounds(testEnv, reference, sent(content)).platform!;
const times = (amount: Usd, tenths: bigint) => formatUsd(multiplyByRatio(amount, tenths, 1n, 'down'));

/**
 * The upstream reports the worst-case tokens of the request, so a booked call costs exactly its hold
 * (`small` answers with few tokens). `wait` calls stay open until `release()`; `fail` answers 500.
 */
function scriptedUpstream(delayMs = 0) {
  let release: () => void = () => undefined;
  let gate = Promise.resolve();
  const upstream = fakeUpstream(async (request: RecordedRequest) => {
    const content = (request.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (content.startsWith('wait')) await gate;
    if (content.endsWith('fail')) return jsonResponse({ error: { message: 'upstream broke' } }, 500);
    const small = content.endsWith('small');
    const prompt = small ? 3 : worstCaseInputTokens(sent(content), reference);
    const completion = small ? 1 : maxTokens;
    return jsonResponse(openAiCompletion('x', { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }));
  });
  return {
    ...upstream,
    hold() {
      gate = new Promise((resolve) => {
        release = resolve;
      });
    },
    release: () => release(),
  };
}

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  return { status: response.status, ...body.error };
}

/**
 * Once every call has settled, the refused call left nothing that bills: no usage, nothing held, and
 * its call record (if any) abandoned without a route.
 */
async function expectNothingBilled(requestId: string, session: LimitedSession) {
  await settled(testEnv);
  expect(await sql(testEnv, 'select 1 from usage_events where client_request_id = $1', [requestId])).toEqual([]);
  const calls = await sql<{ status: string; route_mode: string | null; held: string | null }>(
    testEnv,
    `select g.status, g.route_mode, (select h.status from balance_holds h where h.request_id = g.money_key) as held
       from gateway_calls g where g.client_request_id = $1`,
    [requestId],
  );
  for (const row of calls) expect(row).toMatchObject({ status: 'abandoned', route_mode: null });
  expect(calls.every((row) => row.held === null || row.held === 'released')).toBe(true);
  expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
}

async function until(condition: () => boolean) {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('cost of the limits', () => {
  /** The gateway, counting the Postgres statements it runs itself (a wallet object's are its own). */
  function countingApp() {
    const counted = { statements: 0 };
    const app = gatewayWith({
      upstreamFetch: scriptedUpstream().fetch,
      openDatabase: (env) =>
        observeStatements(createDatabase(env), (run) => {
          counted.statements++;
          return run();
        }),
    });
    return { app, counted };
  }

  it('add no database round trip: with every limit set, a call the lease covers runs no statement at all', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: '1.00000000', spendPerMonthUsd: '2.00000000', requestsPerMinute: 100 });
    const session = await limited.session();
    const { app, counted } = countingApp();
    // The first call takes the lease (one statement of the wallet object's).
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    const object = walletObjectOf(session.token);
    const before = (await object.snapshot()).statements;
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    expect(counted.statements).toBe(0);
    expect((await object.snapshot()).statements).toBe(before);
  });
});

describe('spend per day', () => {
  it('serves calls while booked + this call’s worst case ≤ the limit (equal included), then 402 budget_exceeded naming the daily limit; nothing held, booked or sent', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: times(worstCase(), 20n) });
    const session = await limited.session();
    const upstream = scriptedUpstream();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });

    for (let index = 0; index < 2; index++) expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    // Each booking cost exactly the worst case: two fill the limit to the cent.
    await settled(testEnv);
    expect((await endUserSpend(testEnv, session.endUserId)).booked).toBe(times(worstCase(), 20n));

    const requestId = newRequestId();
    const refused = await chat(app, testEnv, session.token, ask('hello'), requestId);
    const error = await errorOf(refused);
    expect(error).toMatchObject({ status: 402, code: 'budget_exceeded', request_id: requestId });
    expect(error.message).toContain(`${times(worstCase(), 20n)} USD per day`);
    expect(upstream.requests).toHaveLength(2);
    await expectNothingBilled(requestId, session);
  });

  it('counts usage of the current UTC day only: booked usage moved to yesterday frees the limit', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: times(worstCase(), 15n) });
    const session = await limited.session();
    const app = gatewayWith({ upstreamFetch: scriptedUpstream().fetch });
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(402);

    await settled(testEnv);
    await sql(
      testEnv,
      `update usage_events set created_at = date_trunc('day', now(), 'UTC') - interval '1 second' where end_user_id = $1`,
      [session.endUserId],
    );
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
  });

  it('counts a call in flight at its hold; once it settles for less, or fails and releases its hold, the room counts again', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: times(worstCase(), 15n) });
    const session = await limited.session();
    const upstream = scriptedUpstream();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });

    upstream.hold();
    const inFlight = chat(app, testEnv, session.token, ask('wait small'));
    await until(() => upstream.requests.length === 1);
    expect(formatUsd(await heldForCalls(testEnv, session))).toBe(formatUsd(worstCase('wait small')));
    const whileHeld = await chat(app, testEnv, session.token, ask('hello'));
    expect(await errorOf(whileHeld)).toMatchObject({ status: 402, code: 'budget_exceeded' });
    upstream.release();
    expect((await inFlight).status).toBe(200);
    // Settled at a few tokens: the worst case of the next call fits beside it.
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);

    const other = await limited.session();
    upstream.hold();
    const failing = chat(app, testEnv, other.token, ask('wait fail'));
    await until(() => upstream.requests.length === 3);
    expect((await chat(app, testEnv, other.token, ask('hello'))).status).toBe(402);
    upstream.release();
    expect((await failing).status).toBe(502);
    expect((await chat(app, testEnv, other.token, ask('hello'))).status).toBe(200);
  });

  it('is per end user: another user of the same app has their own limit', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: times(worstCase(), 10n) });
    const app = gatewayWith({ upstreamFetch: scriptedUpstream().fetch });
    const first = await limited.session();
    const second = await limited.session();
    expect((await chat(app, testEnv, first.token, ask('hello'))).status).toBe(200);
    expect((await chat(app, testEnv, first.token, ask('hello'))).status).toBe(402);
    expect((await chat(app, testEnv, second.token, ask('hello'))).status).toBe(200);
  });
});

describe('spend per month', () => {
  it('refuses past the monthly limit naming it (before the daily one), and counts the current UTC month only', async () => {
    const limited = await limitedApp(testEnv, { spendPerMonthUsd: times(worstCase(), 20n), spendPerDayUsd: times(worstCase(), 20n) });
    const session = await limited.session();
    const app = gatewayWith({ upstreamFetch: scriptedUpstream().fetch });
    for (let index = 0; index < 2; index++) expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    const refused = await errorOf(await chat(app, testEnv, session.token, ask('hello')));
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(refused.message).toContain('per calendar month');

    // Earlier this month (yesterday, or today when today is the 1st) still counts for the month.
    await settled(testEnv);
    await sql(
      testEnv,
      `update usage_events set created_at = greatest(faucet_month_start(now()), date_trunc('day', now(), 'UTC') - interval '1 day')
        where end_user_id = $1`,
      [session.endUserId],
    );
    expect((await errorOf(await chat(app, testEnv, session.token, ask('hello')))).message).toContain('per calendar month');
    await settled(testEnv);
    await sql(testEnv, `update usage_events set created_at = faucet_month_start(now()) - interval '1 second' where end_user_id = $1`, [
      session.endUserId,
    ]);
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
  });

  it('a month limit alone refuses too (the day sum is skipped, the month sum is not)', async () => {
    const limited = await limitedApp(testEnv, { spendPerMonthUsd: times(worstCase(), 10n) });
    const session = await limited.session();
    const app = gatewayWith({ upstreamFetch: scriptedUpstream().fetch });
    expect((await chat(app, testEnv, session.token, ask('hello'))).status).toBe(200);
    expect(await errorOf(await chat(app, testEnv, session.token, ask('hello')))).toMatchObject({ status: 402, code: 'budget_exceeded' });
  });
});

describe('spend limits on routes the user does not pay the platform for', () => {
  it('developer_key: booked retail and the in-flight hold (the developer price) count; a byok call without fee is never refused', async () => {
    const limited = await limitedApp(testEnv);
    await sql(testEnv, `update app_features set developer_price_per_mtok_usd = 5 where app_id = $1`, [limited.appId]);
    const key = await send(testEnv, '/v1/developer/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
      token: limited.developerKey,
    });
    expect(key.status).toBe(201);
    const session = await limited.session();
    const upstream = scriptedUpstream();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });

    // One call without limits, to learn its worst case on this route (its hold).
    upstream.hold();
    const first = chat(app, testEnv, session.token, ask('wait'));
    await until(() => upstream.requests.length === 1);
    const held = await heldForCalls(testEnv, session);
    upstream.release();
    const firstBody = (await (await first).json()) as { faucet: { route_mode: string; charge: { amount_usd: string } } };
    expect(firstBody.faucet.route_mode).toBe('developer_key');
    expect(firstBody.faucet.charge.amount_usd).toBe(formatUsd(held));

    // Limit = twice that: one more call fits, but not while another is in flight.
    await limited.setLimits({ spendPerDayUsd: formatUsd(addUsd(held, held)) });
    upstream.hold();
    const second = chat(app, testEnv, session.token, ask('wait'));
    await until(() => upstream.requests.length === 2);
    expect(await errorOf(await chat(app, testEnv, session.token, ask('hello')))).toMatchObject({ status: 402, code: 'budget_exceeded' });
    upstream.release();
    expect((await second).status).toBe(200);
    await settled(testEnv);
    expect((await endUserSpend(testEnv, session.endUserId)).booked).toBe(formatUsd(addUsd(held, held)));

    // The limit is reached; a byok call (no open fee) can charge nothing and is served.
    const userKey = await send(testEnv, '/v1/user/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey() },
      token: session.token,
    });
    expect(userKey.status).toBe(201);
    const byok = await chat(app, testEnv, session.token, { ...ask('hello'), route_mode: 'byok' });
    expect(byok.status).toBe(200);
    expect(((await byok.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd).toBe('0.00000000');
    expect(await errorOf(await chat(app, testEnv, session.token, ask('hello')))).toMatchObject({ status: 402, code: 'budget_exceeded' });
  });
});

describe('requests per minute', () => {
  it('serves the limit, then 429 rate_limited with retry-after = seconds until a call leaves the 60 s window; nothing written', async () => {
    const limited = await limitedApp(testEnv, { requestsPerMinute: 3 });
    const session = await limited.session();
    const upstream = scriptedUpstream();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    for (let index = 0; index < 3; index++) expect((await chat(app, testEnv, session.token, ask('small'))).status).toBe(200);

    // The window's oldest call is 50 s old: the next slot opens in ~10 s.
    await settled(testEnv);
    await sql(
      testEnv,
      `update gateway_calls set created_at = now() - interval '50 seconds'
        where id = (select id from gateway_calls where end_user_id = $1 order by created_at limit 1)`,
      [session.endUserId],
    );
    const requestId = newRequestId();
    const refused = await chat(app, testEnv, session.token, ask('small'), requestId);
    const error = await errorOf(refused);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', request_id: requestId });
    expect(error.message).toContain('3 calls per minute');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(9);
    expect(retryAfter).toBeLessThanOrEqual(11);
    expect(upstream.requests).toHaveLength(3);
    expect(await sql(testEnv, 'select 1 from gateway_calls where client_request_id = $1', [requestId])).toEqual([]);
    await expectNothingBilled(requestId, session);

    // Once that call has left the window, one more call is served, and the window is full again.
    await sql(
      testEnv,
      `update gateway_calls set created_at = now() - interval '61 seconds' where end_user_id = $1 and created_at < now() - interval '40 seconds'`,
      [session.endUserId],
    );
    expect((await chat(app, testEnv, session.token, ask('small'))).status).toBe(200);
    expect((await chat(app, testEnv, session.token, ask('small'))).status).toBe(429);
  });

  it('refused calls do not count: calls refused for the balance or the rate leave the window as it was', async () => {
    const limited = await limitedApp(testEnv, { requestsPerMinute: 2 });
    const session = await limited.session('0.00000000');
    const app = gatewayWith({ upstreamFetch: scriptedUpstream().fetch });
    const statuses = async (count: number) => {
      const answered: number[] = [];
      for (let index = 0; index < count; index++) answered.push((await chat(app, testEnv, session.token, ask('small'))).status);
      return answered;
    };
    expect(await statuses(3)).toEqual([402, 402, 402]);
    await fund(testEnv, session.walletId, '1.00000000');
    expect(await statuses(4)).toEqual([200, 200, 429, 429]);
    // The two served calls leave the window; the two 429s were never in it.
    await settled(testEnv);
    await sql(testEnv, `update gateway_calls set created_at = now() - interval '61 seconds' where end_user_id = $1`, [session.endUserId]);
    expect(await statuses(3)).toEqual([200, 200, 429]);
  });
});

describe('an attacker racing the limits', () => {
  it('20 concurrent calls whose worst cases together pass the daily cap: exactly as many as fit are served, booked + held never above the cap', async () => {
    // Each call costs exactly its worst case; the cap fits 5.5 of them.
    const cap = times(worstCase(), 55n);
    const limited = await limitedApp(testEnv, { spendPerDayUsd: cap });
    const session = await limited.session();
    const upstream = scriptedUpstream(100);
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const responses = await Promise.all(Array.from({ length: 20 }, () => chat(app, testEnv, session.token, ask('hello'))));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 402)).toHaveLength(15);
    for (const response of responses.filter((candidate) => candidate.status === 402))
      expect((await errorOf(response)).code).toBe('budget_exceeded');
    expect(upstream.requests).toHaveLength(5);
    await settled(testEnv);
    const spend = await endUserSpend(testEnv, session.endUserId);
    expect(spend).toEqual({ booked: times(worstCase(), 50n), held: '0.00000000', calls: 5 });
  });

  it('20 concurrent calls against a limit of 5 per minute: exactly 5 are served, 15 get 429 with retry-after', async () => {
    const limited = await limitedApp(testEnv, { requestsPerMinute: 5 });
    const session = await limited.session();
    const upstream = scriptedUpstream(50);
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const responses = await Promise.all(Array.from({ length: 20 }, () => chat(app, testEnv, session.token, ask('small'))));
    expect(responses.filter((response) => response.status === 200)).toHaveLength(5);
    const refused = responses.filter((response) => response.status === 429);
    expect(refused).toHaveLength(15);
    for (const response of refused) {
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(response.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
    expect(upstream.requests).toHaveLength(5);
    await settled(testEnv);
    expect((await endUserSpend(testEnv, session.endUserId)).calls).toBe(5);
  });
});
