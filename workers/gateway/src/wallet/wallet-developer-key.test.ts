/**
 * The developer-key route on the lease: a call on the app developer's own key is
 * authorized by the end user's wallet object, with no Postgres round trip while its lease covers the
 * end user's worst case and its budget lease — part of the key's monthly budget that Postgres
 * reserved for this object — covers the call's worst-case upstream cost. Written as the attacker
 * (many end users at once against a small budget), the dying gateway (a call never settled) and the
 * developer who disables a key (never used again).
 */
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareUsd, formatUsd, multiplyByRatio, parseDatabaseAmount, type Usd } from '#shared/money/index.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { chat } from '../../../test/gateway-kit.ts';
import { limitedApp } from '../../../test/limits-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';
import {
  authorizeOnly,
  countingGateway,
  expectBooksAgree,
  leasedTestEnv,
  sweepCallNow,
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

const ask = (extra: Record<string, unknown> = {}) => worstCaseAsk('hello', extra);
/** A call's worst-case upstream cost at catalog price: what it reserves of the key's budget. */
const worstCost = (): Usd => holdBounds(testEnv, worstCaseReference, worstCaseSent('hello')).developerKeyAtCost as Usd;
const times = (amount: Usd, count: bigint): Usd => multiplyByRatio(amount, count, 0n, 'down');

interface Faucet {
  route_mode: string;
  charge: { amount_usd: string };
}

async function faucetOf(response: Response): Promise<Faucet> {
  expect(response.status).toBe(200);
  return ((await response.json()) as { faucet: Faucet }).faucet;
}

/** A new developer's app (no limits) and their openai key with `budget` a month. */
async function keyedApp(budget: string) {
  const app = await limitedApp(testEnv);
  const apiKey = fakeOpenAiKey();
  const response = await send(testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: apiKey, monthly_budget_usd: budget },
    token: app.developerKey,
  });
  expect(response.status).toBe(201);
  return { ...app, keyId: (response.body as { id: string }).id, apiKey };
}

/** What the key has recorded this month, and what every reservation of it still holds (as the per-call check sums them). */
async function keySpend(keyId: string) {
  const [row] = await sql<{ recorded: string; reserved: string; leases: number }>(
    testEnv,
    `select (select coalesce(sum(upstream_cost_usd), 0)::numeric(20, 8)::text from usage_events where provider_credential_id = $1) as recorded,
            (select coalesce(sum(amount), 0)::numeric(20, 8)::text from provider_credential_reservations r
              where credential_id = $1 and (expires_at is null or expires_at > now())
                and not exists (select 1 from usage_events u where u.request_id = r.request_id)) as reserved,
            (select count(*)::int from provider_credential_reservations where credential_id = $1 and request_id like 'lease:%'
                and expires_at > now()) as leases`,
    [keyId],
  );
  return row!;
}

describe('a developer-key call on the lease', () => {
  it("is authorized by the object with the developer's key, no gateway statement, charged the feature's price and booked once with that key", async () => {
    const app = await keyedApp('10.00000000');
    await sql(testEnv, `update app_features set developer_price_per_mtok_usd = 5 where app_id = $1`, [app.appId]);
    const session = await app.session('1.00000000');
    const upstream = worstCaseUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);

    // Nothing asked for: the developer's key comes before the platform pool (DESIGN §6). The first
    // call of the cold wallet takes its context, its lease and the key's budget in one statement; the
    // second, asking for the route by name, runs none: the context is the same facts whatever route
    // is asked (decideCall chooses), and the lease and the budget lease cover it.
    const object = walletObjectOf(session.token);
    const first = await faucetOf(await chat(gateway, testEnv, session.token, ask()));
    expect((await object.snapshot()).statements).toBe(1);
    const second = await faucetOf(await chat(gateway, testEnv, session.token, ask({ route_mode: 'developer_key' })));
    expect((await object.snapshot()).statements).toBe(1);
    expect([first.route_mode, second.route_mode]).toEqual(['developer_key', 'developer_key']);
    expect(counted.statements).toBe(0);
    expect(upstream.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${app.apiKey}`, `Bearer ${app.apiKey}`]);
    // The feature's price (5 USD per million tokens) of the tokens the upstream reported.
    const usage = worstUsage(upstream.requests[0]!);
    const charge = formatUsd(multiplyByRatio(parseDatabaseAmount('5.00000000'), BigInt(usage.total_tokens), 6n, 'up'));
    expect(first.charge.amount_usd).toBe(charge);

    // The object holds part of the key's budget: the two calls' recorded cost and a chunk.
    const held = (await object.snapshot()).keyBudgets[app.keyId];
    expect(held?.committedUsd).toBe(formatUsd(times(worstCost(), 2n)));
    expect(unitsOf(held!.leaseUsd)).toBeGreaterThanOrEqual(unitsOf(held!.committedUsd));
    expect((await keySpend(app.keyId)).leases).toBe(1);

    await object.flush();
    const calls = await sql<{ route_mode: string; provider_credential_id: string; status: string; retail_usd: string; upstream: string }>(
      testEnv,
      `select g.route_mode, g.provider_credential_id, g.status, u.retail_usd::text, u.upstream_cost_usd::text as upstream
         from gateway_calls g join usage_events u on u.call_id = g.id where g.end_user_id = $1`,
      [session.endUserId],
    );
    const booked = { route_mode: 'developer_key', provider_credential_id: app.keyId, status: 'settled', retail_usd: charge };
    expect(calls).toEqual([
      { ...booked, upstream: formatUsd(worstCost()) },
      { ...booked, upstream: formatUsd(worstCost()) },
    ]);
    // Booked, the calls' cost left the object's budget lease (Postgres counts it as recorded now).
    const after = (await object.snapshot()).keyBudgets[app.keyId];
    expect(after?.committedUsd).toBe('0.00000000');
    // Renewed in the same statement: the chunk beyond the calls on the key (WALLET_KEY_BUDGET_USD, 0.10).
    expect(after?.leaseUsd).toBe('0.10000000');
    const spend = await keySpend(app.keyId);
    expect(spend.recorded).toBe(held?.committedUsd);
    expect(spend.reserved).toBe(after?.leaseUsd);
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it('an attacker with 4 end users × 6 calls at once never passes the budget of 3 calls: the rest fall back to the platform, or are refused when the key was asked for', async () => {
    const budget = formatUsd(times(worstCost(), 3n));
    const app = await keyedApp(budget);
    const sessions = await Promise.all([0, 1, 2, 3].map(() => app.session('1.00000000')));
    const upstream = worstCaseUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);
    const responses = await Promise.all(
      sessions.flatMap((session) =>
        Array.from({ length: 6 }, (_, index) =>
          chat(gateway, testEnv, session.token, index % 2 === 0 ? ask() : ask({ route_mode: 'developer_key' })),
        ),
      ),
    );
    const outcomes = await Promise.all(
      responses.map(async (response) => {
        const body = (await response.json()) as { faucet?: Faucet; error?: { code: string } };
        return response.status === 200 ? (body.faucet?.route_mode as string) : `${response.status} ${body.error?.code}`;
      }),
    );
    const onKey = outcomes.filter((outcome) => outcome === 'developer_key').length;
    expect(onKey).toBeGreaterThan(0);
    expect(onKey).toBeLessThanOrEqual(3);
    // Nothing asked for past the budget: the platform route; the key asked for: 402 budget_exceeded.
    expect(new Set(outcomes)).toEqual(new Set(['developer_key', 'platform', '402 budget_exceeded']));
    outcomes.forEach((outcome, index) => {
      if (index % 2 === 0) expect(['developer_key', 'platform']).toContain(outcome);
      else expect(['developer_key', '402 budget_exceeded']).toContain(outcome);
    });
    expect(upstream.requests).toHaveLength(outcomes.filter((outcome) => !outcome.startsWith('402')).length);
    // Every one decided by the objects: the fallbacks too are on the lease.
    expect(counted.statements).toBe(0);
    // The upstream was called with the developer's key exactly for the calls on it.
    expect(upstream.requests.filter((request) => request.headers.authorization === `Bearer ${app.apiKey}`)).toHaveLength(onKey);
    for (const session of sessions) await walletObjectOf(session.token).flush();
    const spend = await keySpend(app.keyId);
    expect(unitsOf(spend.recorded) + unitsOf(spend.reserved)).toBeLessThanOrEqual(unitsOf(budget));
    expect(compareUsd(parseDatabaseAmount(spend.recorded), times(worstCost(), BigInt(onKey)))).toBe(0);
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it("a budget leased out by one object: another end user's calls fall back to the platform on their lease (or are refused asking for the key) until it is given back", async () => {
    const budget = formatUsd(times(worstCost(), 3n));
    const app = await keyedApp(budget);
    const [alice, bob] = await Promise.all([app.session('1.00000000'), app.session('1.00000000')]);
    const upstream = worstCaseUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);
    expect((await faucetOf(await chat(gateway, testEnv, alice.token, ask()))).route_mode).toBe('developer_key');
    // Alice's object holds the rest of the budget (its chunk is larger): Bob's call falls back to the
    // platform route, on his lease too; asked for, the key is refused.
    const bobs = walletObjectOf(bob.token);
    expect((await faucetOf(await chat(gateway, testEnv, bob.token, ask()))).route_mode).toBe('platform');
    expect(await errorOf(await chat(gateway, testEnv, bob.token, ask({ route_mode: 'developer_key' })))).toMatchObject({
      status: 402,
      code: 'budget_exceeded',
    });
    // For the next seconds his object does not ask again: no statement.
    const statements = (await bobs.snapshot()).statements;
    expect((await faucetOf(await chat(gateway, testEnv, bob.token, ask()))).route_mode).toBe('platform');
    expect((await bobs.snapshot()).statements).toBe(statements);
    expect(counted.statements).toBe(0);
    // Alice's object gives its lease back (as after two idle minutes): once those seconds have passed,
    // Bob's next call is on the key.
    const object = walletObjectOf(alice.token);
    await object.recall();
    await object.resume();
    expect((await object.snapshot()).keyBudgets).toEqual({});
    await runInDurableObject(bobs, (instance) => {
      (instance as unknown as { authorizeStep: { budgetShortUntil: Map<string, number> } }).authorizeStep.budgetShortUntil.clear();
    });
    expect((await faucetOf(await chat(gateway, testEnv, bob.token, ask()))).route_mode).toBe('developer_key');
    await walletObjectOf(bob.token).flush();
    const spend = await keySpend(app.keyId);
    expect(spend.recorded).toBe(formatUsd(times(worstCost(), 2n)));
    expect(upstream.requests.filter((request) => request.headers.authorization === `Bearer ${app.apiKey}`)).toHaveLength(2);
    expect(unitsOf(spend.recorded) + unitsOf(spend.reserved)).toBeLessThanOrEqual(unitsOf(budget));
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it('a budget lease renewed for less than the call may run is no room: the key asked for is refused, nothing asked takes the platform', async () => {
    const app = await keyedApp('10.00000000');
    const session = await app.session('5.00000000');
    const upstream = worstCaseUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);
    const object = walletObjectOf(session.token);
    expect((await faucetOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('developer_key');
    expect(counted.statements).toBe(0);
    // As if Postgres granted the budget lease for a second only (the lease held, and every renewal).
    await runInDurableObject(object, (instance) => {
      const patched = instance as unknown as {
        state: { meta: { lease: { budgets?: Record<string, { expiresAt: number }> } } };
        leases: { syncNow: (...args: unknown[]) => Promise<void> };
      };
      const syncNow = patched.leases.syncNow.bind(patched.leases);
      patched.leases.syncNow = async (...args: unknown[]) => {
        await syncNow(...args);
        for (const budget of Object.values(patched.state.meta.lease.budgets ?? {})) budget.expiresAt = Date.now() + 1_000;
      };
      for (const budget of Object.values(patched.state.meta.lease.budgets ?? {})) budget.expiresAt = Date.now() + 1_000;
    });
    const refused = await chat(gateway, testEnv, session.token, ask({ route_mode: 'developer_key' }));
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
    // Nothing asked for: the platform takes it (the key is marked short for a while).
    expect((await faucetOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('platform');
    expect(counted.statements).toBe(0);
    await object.flush();
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });

  it('never settled (its gateway died): booked at its bound with its key, and its cost taken from the budget lease', async () => {
    const app = await keyedApp('10.00000000');
    const session = await app.session('1.00000000');
    const object = walletObjectOf(session.token);
    const callId = crypto.randomUUID();
    const decision = await authorizeOnly(testEnv, session.token, {
      id: callId,
      clientRequestId: 'req_developer_key_never_settled',
      requestedRoute: 'developer_key',
    });
    expect(decision).toMatchObject({ outcome: 'authorized', routeMode: 'developer_key', routeKey: { id: app.keyId } });
    // In flight it reserves its worst-case cost (authorizeOnly's) of the budget lease, and holds it of the balance (no developer price).
    expect((await object.snapshot()).keyBudgets[app.keyId]?.committedUsd).toBe('0.00080000');
    expect((await object.snapshot()).committedUsd).toBe('0.00080000');
    await sweepCallNow(session.token, callId);
    const [booked] = await sql<{ estimated: boolean; provider_credential_id: string; route_mode: string; upstream: string }>(
      testEnv,
      `select u.estimated, g.provider_credential_id, g.route_mode, u.upstream_cost_usd::text as upstream
         from usage_events u join gateway_calls g on g.id = u.call_id where u.call_id = $1`,
      [callId],
    );
    expect(booked).toMatchObject({ estimated: true, provider_credential_id: app.keyId, route_mode: 'developer_key' });
    expect(unitsOf(booked!.upstream)).toBeGreaterThan(0n);
    expect((await walletObjectOf(session.token).snapshot()).keyBudgets[app.keyId]?.committedUsd ?? '0.00000000').toBe('0.00000000');
    const spend = await keySpend(app.keyId);
    expect(spend.recorded).toBe(booked!.upstream);
    await expectBooksAgree(testEnv, []);
  });

  it('a key the developer disables is never used again: the objects holding its budget are told, and give it back', async () => {
    const app = await keyedApp('10.00000000');
    const session = await app.session('1.00000000');
    const upstream = worstCaseUpstream();
    const { gateway } = countingGateway(upstream.fetch);
    expect((await faucetOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('developer_key');
    const disabled = await send(testEnv, `/v1/developer/provider-keys/${app.keyId}`, { method: 'DELETE', token: app.developerKey });
    expect(disabled.status).toBe(200);
    // The very next call: the platform route (the object's cached routing was dropped), never the key.
    expect((await faucetOf(await chat(gateway, testEnv, session.token, ask()))).route_mode).toBe('platform');
    expect(await errorOf(await chat(gateway, testEnv, session.token, ask({ route_mode: 'developer_key' })))).toMatchObject({
      status: 400,
    });
    expect(upstream.requests.map((request) => request.headers.authorization === `Bearer ${app.apiKey}`)).toEqual([true, false]);
    // The next flush gives its budget lease back (a disabled key is granted nothing).
    const object = walletObjectOf(session.token);
    await object.flush();
    expect((await object.snapshot()).keyBudgets).toEqual({});
    expect((await keySpend(app.keyId)).leases).toBe(0);
    await expectBooksAgree(testEnv, upstream.requests, worstUsage);
  });
});

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string } };
  return { status: response.status, code: body.error.code };
}
