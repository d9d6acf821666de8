/**
 * With the app's per-end-user limits: the wallet object authorizes the calls of an app with a daily
 * or monthly spend limit, or a requests-per-minute limit, on its lease, which Postgres caps by the
 * room the limits leave (faucet_settle_lease). Written as the attacker: calls past the limit one by
 * one and all at once, on the platform route and on the developer's key.
 */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { addUsd, formatUsd, multiplyByRatio, type Usd } from '#shared/money/index.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { chat } from '../../../test/gateway-kit.ts';
import { endUserSpend, type EndUserLimits, limitedApp } from '../../../test/limits-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';
import {
  authorizeOnly,
  countingGateway,
  expectBooksAgree,
  leasedTestEnv,
  unitsOf,
  walletObjectOf,
  worstCaseAsk,
  worstCaseReference,
  worstCaseSent,
  worstCaseUpstream,
  worstUsage,
} from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await leasedTestEnv();
});

const ask = (content = 'hello') => worstCaseAsk(content);
/** A platform call's worst case (its hold, and its charge: the upstream below reports the worst-case tokens). */
const worst = (): Usd => holdBounds(testEnv, worstCaseReference, worstCaseSent('hello')).platform as Usd;
const tenthsOf = (amount: Usd, tenths: bigint): Usd => multiplyByRatio(amount, tenths, 1n, 'down');

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code, message: body.error.message };
}

async function routeOf(response: Response) {
  expect(response.status).toBe(200);
  return ((await response.json()) as { faucet: { route_mode: string; charge: { amount_usd: string } } }).faucet;
}

/** A platform call asked for by name, and a developer-key one (on the lease too: the object leases part of the key's budget). */
const onPlatform = { ...ask(), route_mode: 'platform' };
const onDeveloperKey = { ...ask(), route_mode: 'developer_key' };
/** 21 calls at once: a third on the platform route, the rest on the developer_key route. */
const mixedCalls = (gateway: Parameters<typeof chat>[0], token: string) =>
  Array.from({ length: 21 }, (_, index) => chat(gateway, testEnv, token, index % 3 === 0 ? onPlatform : onDeveloperKey));

/** The app's developer registers an openai key of their own. */
async function developerKeyOf(developerKey: string): Promise<void> {
  const key = await send(testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(key.status).toBe(201);
}

/**
 * One test's scene: a new app under `limits` (its developer's openai key registered when asked), a
 * session of a new end user with `balance`, the worst-case upstream and a gateway counting its own
 * statements; `booksAgree` is the invariant each test ends on (the object's calls booked, each
 * upstream call billed once, the books reconciled).
 */
async function scene(limits: EndUserLimits, balance = '1.00000000', options: { developerKey?: boolean } = {}) {
  const limited = await limitedApp(testEnv, limits);
  if (options.developerKey === true) await developerKeyOf(limited.developerKey);
  const session = await limited.session(balance);
  const upstream = worstCaseUpstream();
  const { gateway, counted } = countingGateway(upstream.fetch);
  const booksAgree = async () => {
    await walletObjectOf(session.token).flush();
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  };
  return { limited, session, upstream, gateway, counted, booksAgree };
}

async function leaseHold(walletId: string): Promise<string | undefined> {
  const [row] = await sql<{ amount: string }>(
    testEnv,
    `select amount::text from balance_holds where wallet_id = $1 and request_id like 'lease:%' and status = 'active'`,
    [walletId],
  );
  return row?.amount;
}

describe('a daily spend limit caps the lease', () => {
  it('serves the calls that fit on the lease with no gateway statement, then refuses 402 naming the daily limit; nothing sent, booked + held within it', async () => {
    const limit = formatUsd(tenthsOf(worst(), 25n));
    const { session, upstream, gateway, counted, booksAgree } = await scene({ spendPerDayUsd: limit });

    // Two calls fit (2 × worst ≤ 2.5 × worst): both on the lease, which Postgres capped at the limit
    // (the chunk, 1 USD, would be far more).
    for (let index = 0; index < 2; index++)
      expect((await routeOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('platform');
    expect(counted.statements).toBe(0);
    expect(await leaseHold(session.walletId)).toBe(limit);

    // The third would pass it: refused after one renewal, naming the limit; nothing sent upstream.
    const refused = await errorOf(await chat(gateway, testEnv, session.token, ask()));
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(refused.message).toContain(`spend limit per user of ${limit} USD per day`);
    expect(upstream.requests).toHaveLength(2);
    expect(counted.statements).toBe(0);

    await walletObjectOf(session.token).flush();
    const spend = await endUserSpend(testEnv, session.endUserId);
    expect(spend.booked).toBe(formatUsd(addUsd(worst(), worst())));
    expect(unitsOf(spend.booked) + unitsOf(spend.held)).toBeLessThanOrEqual(unitsOf(limit));
    await booksAgree();
  });

  it('names the monthly limit when it is the one a call would pass (the month first)', async () => {
    const month = formatUsd(tenthsOf(worst(), 15n));
    const { session, upstream, gateway, booksAgree } = await scene({
      spendPerDayUsd: formatUsd(tenthsOf(worst(), 100n)),
      spendPerMonthUsd: month,
    });
    await routeOf(await chat(gateway, testEnv, session.token, ask()));
    const refused = await errorOf(await chat(gateway, testEnv, session.token, ask()));
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(refused.message).toContain(`spend limit per user of ${month} USD per calendar month`);
    expect(upstream.requests).toHaveLength(1);
    await booksAgree();
  });

  it('a balance short of the limit is refused as insufficient_balance, not as the limit', async () => {
    const { session, gateway, booksAgree } = await scene({ spendPerDayUsd: '1.00000000' }, formatUsd(tenthsOf(worst(), 15n)));
    await routeOf(await chat(gateway, testEnv, session.token, ask()));
    expect(await errorOf(await chat(gateway, testEnv, session.token, ask()))).toMatchObject({ status: 402, code: 'insufficient_balance' });
    await booksAgree();
  });
});

describe('a limit the developer changes', () => {
  it('holds for the next call: the leases granted under the old limit are given back', async () => {
    const { limited, session, upstream, gateway, booksAgree } = await scene({ spendPerDayUsd: formatUsd(tenthsOf(worst(), 100n)) });
    await routeOf(await chat(gateway, testEnv, session.token, ask()));
    // The lease holds 10 worst cases less the one in it; the developer lowers the limit to one.
    const lowered = formatUsd(worst());
    const patched = await send(testEnv, `/v1/developer/apps/${limited.publicAppId}`, {
      method: 'PATCH',
      json: { limits: { spend_per_day_usd: lowered } },
      token: limited.developerKey,
    });
    expect(patched.status).toBe(200);
    // Spent: one worst case, the new limit: the next call is refused (it was served on the old lease).
    const refused = await errorOf(await chat(gateway, testEnv, session.token, ask()));
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(refused.message).toContain(`spend limit per user of ${lowered} USD per day`);
    expect(upstream.requests).toHaveLength(1);
    await booksAgree();
  });
});

describe('the byok route on a lease capped by a spend limit', () => {
  it('at the limit a byok call without an open fee is still served (it cannot add spend); with a fee it counts', async () => {
    const limited = await limitedApp(testEnv, { spendPerDayUsd: formatUsd(worst()) });
    const session = await limited.session('1.00000000');
    const key = await send(testEnv, '/v1/user/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey() },
      token: session.token,
    });
    expect(key.status).toBe(201);
    const upstream = worstCaseUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);
    expect((await routeOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('platform');
    expect(await errorOf(await chat(gateway, testEnv, session.token, ask()))).toMatchObject({ status: 402, code: 'budget_exceeded' });
    const byok = { ...ask(), route_mode: 'byok' };
    expect(await routeOf(await chat(gateway, testEnv, session.token, byok))).toMatchObject({
      route_mode: 'byok',
      charge: { amount_usd: '0.00000000' },
    });
    expect(counted.statements).toBe(0);
    // An open fee: the byok call's worst case, past the limit now.
    await sql(testEnv, `update app_features set open_fee_usd = 0.00000001 where app_id = $1`, [limited.appId]);
    await walletObjectOf(session.token).forgetContexts();
    expect(await errorOf(await chat(gateway, testEnv, session.token, byok))).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(upstream.requests).toHaveLength(2);
    await walletObjectOf(session.token).flush();
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });
});

describe('an attacker against a spend limit on the lease', () => {
  it('20 concurrent calls against a daily limit of 5 worst cases: exactly 5 served, the rest 402 before the upstream', async () => {
    const limit = formatUsd(tenthsOf(worst(), 50n));
    const { session, upstream, gateway, booksAgree } = await scene({ spendPerDayUsd: limit });
    const responses = await Promise.all(Array.from({ length: 20 }, () => chat(gateway, testEnv, session.token, ask())));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 402)).toHaveLength(15);
    expect(upstream.requests).toHaveLength(5);
    await walletObjectOf(session.token).flush();
    const spend = await endUserSpend(testEnv, session.endUserId);
    expect(spend.booked).toBe(limit);
    expect(unitsOf(spend.booked) + unitsOf(spend.held)).toBeLessThanOrEqual(unitsOf(limit));
    await booksAgree();
  });

  it('7 platform and 14 developer-key calls at once against a daily limit of 5 worst cases: booked + held never above it', async () => {
    const limit = formatUsd(tenthsOf(worst(), 50n));
    const { session, upstream, gateway, booksAgree } = await scene({ spendPerDayUsd: limit }, '5.00000000', { developerKey: true });
    const responses = await Promise.all(mixedCalls(gateway, session.token));
    const served = responses.filter((response) => response.status === 200).length;
    expect(served).toBeGreaterThan(0);
    expect(responses.filter((response) => response.status !== 200).every((response) => response.status === 402)).toBe(true);
    expect(upstream.requests).toHaveLength(served);
    await walletObjectOf(session.token).flush();
    const spend = await endUserSpend(testEnv, session.endUserId);
    expect(spend.calls).toBe(served);
    expect(unitsOf(spend.booked) + unitsOf(spend.held)).toBeLessThanOrEqual(unitsOf(limit));
    await booksAgree();
  });
});

describe('a requests-per-minute limit on the lease', () => {
  it('serves the limit on the lease with no gateway statement, then 429 with retry-after; the window slides', async () => {
    const { session, upstream, gateway, counted, booksAgree } = await scene({ requestsPerMinute: 3 });
    for (let index = 0; index < 3; index++) await routeOf(await chat(gateway, testEnv, session.token, ask()));
    expect(counted.statements).toBe(0);

    const refusedResponse = await chat(gateway, testEnv, session.token, ask());
    const retryAfter = Number(refusedResponse.headers.get('retry-after'));
    const refused = await errorOf(refusedResponse);
    expect(refused).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(refused.message).toContain('This app allows 3 calls per minute per user');
    // The first call is a moment old: about a minute until it leaves the window.
    expect(retryAfter).toBeGreaterThanOrEqual(50);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(upstream.requests).toHaveLength(3);
    expect(counted.statements).toBe(0);

    // A minute later (the records moved back), the window has room again: served on a renewed lease.
    const object = walletObjectOf(session.token);
    await object.flush();
    await sql(testEnv, `update gateway_calls set created_at = created_at - interval '61 seconds' where end_user_id = $1`, [
      session.endUserId,
    ]);
    await routeOf(await chat(gateway, testEnv, session.token, ask()));
    expect(upstream.requests).toHaveLength(4);
    await object.flush();
    await booksAgree();
  });

  it('7 platform and 14 developer-key calls at once against 5 per minute: never more than 5 in the window', async () => {
    const { session, upstream, gateway, booksAgree } = await scene({ requestsPerMinute: 5 }, '5.00000000', { developerKey: true });
    const responses = await Promise.all(mixedCalls(gateway, session.token));
    const served = responses.filter((response) => response.status === 200).length;
    expect(served).toBeGreaterThan(0);
    expect(served).toBeLessThanOrEqual(5);
    expect(responses.filter((response) => response.status !== 200).every((response) => response.status === 429)).toBe(true);
    expect(upstream.requests).toHaveLength(served);
    await walletObjectOf(session.token).flush();
    const [window] = await sql<{ n: number }>(
      testEnv,
      `select count(*)::int as n from gateway_calls where end_user_id = $1 and route_mode is not null`,
      [session.endUserId],
    );
    expect(window!.n).toBe(served);
    await booksAgree();
  });

  it('a call in flight for more than a minute has left the window: it takes no call slot', async () => {
    const limited = await limitedApp(testEnv, { requestsPerMinute: 1 });
    const session = await limited.session('1.00000000');
    // A long call, authorized 61 s ago and still streaming.
    const longCall = crypto.randomUUID();
    const decision = await authorizeOnly(testEnv, session.token, {
      id: longCall,
      clientRequestId: 'req_long_call',
      authorizedAt: Date.now() - 61_000,
    });
    expect(decision.outcome).toBe('authorized');
    const upstream = worstCaseUpstream();
    const { gateway } = countingGateway(upstream.fetch);
    await routeOf(await chat(gateway, testEnv, session.token, ask()));
    // The window now holds that call: the next one waits for it to leave.
    expect(await errorOf(await chat(gateway, testEnv, session.token, ask()))).toMatchObject({ status: 429, code: 'rate_limited' });
    const object = walletObjectOf(session.token);
    await object.abandon(longCall);
    await object.flush();
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it('an idle object gives back call slots even when its lease holds no money (an unfunded byok user)', async () => {
    const limited = await limitedApp(testEnv, { requestsPerMinute: 3 });
    const session = await limited.session('0.00000000');
    const key = await send(testEnv, '/v1/user/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey() },
      token: session.token,
    });
    expect(key.status).toBe(201);
    const upstream = worstCaseUpstream();
    const { gateway } = countingGateway(upstream.fetch);
    expect((await routeOf(await chat(gateway, testEnv, session.token, { ...ask(), route_mode: 'byok' }))).route_mode).toBe('byok');
    const object = walletObjectOf(session.token);
    await object.flush();
    const leaseRow = () =>
      sql<{ amount: string; call_slots: number; status: string }>(
        testEnv,
        `select h.amount::text, h.call_slots, h.status from balance_holds h join wallets w on w.id = h.wallet_id
          where w.end_user_id = $1 and h.request_id like 'lease:%'`,
        [session.endUserId],
      );
    expect(await leaseRow()).toEqual([{ amount: '0.00000000', call_slots: 2, status: 'active' }]);
    // Two minutes without a call: the alarm gives the slots back to the window.
    await runInDurableObject(object, async (instance) => {
      (instance as unknown as { state: { meta: { lastActivity: number } } }).state.meta.lastActivity = Date.now() - 600_000;
    });
    expect(await runDurableObjectAlarm(object)).toBe(true);
    expect(await leaseRow()).toEqual([{ amount: '0.00000000', call_slots: 0, status: 'released' }]);
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it('20 concurrent calls against a limit of 5 per minute: exactly 5 served, 15 get 429 with retry-after, none sent', async () => {
    const { session, upstream, gateway, booksAgree } = await scene({ requestsPerMinute: 5 });
    const responses = await Promise.all(Array.from({ length: 20 }, () => chat(gateway, testEnv, session.token, ask())));
    const refused = responses.filter((response) => response.status === 429);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const response of refused) {
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect(upstream.requests).toHaveLength(5);
    await booksAgree();
  });
});
