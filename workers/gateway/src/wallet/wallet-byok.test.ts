/**
 * The byok route on the lease: a call on the end user's own key is authorized by their
 * wallet object (no Postgres round trip when its lease covers the open fee), with the key the
 * per-call path would take, charged and booked the same way. Written as the attacker and the
 * forgetful cache: a key added is used by the next call, a key disabled never again, a call never
 * settled is booked at its bound (the open fee), and a flushed record naming another user's key is
 * refused.
 */
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { chat, fundedSession } from '../../../test/gateway-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';
import {
  answeringUpstream,
  authorizeOnly,
  countingGateway,
  expectBooksAgree,
  leasedTestEnv,
  platformCall,
  sweepCallNow,
  walletObjectOf,
} from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await leasedTestEnv();
});

const fee = '0.00200000';
const byokCall = { ...platformCall, route_mode: 'byok' };

async function faucetOf(response: Response) {
  expect(response.status).toBe(200);
  return ((await response.json()) as { faucet: { route_mode: string; charge: { amount_usd: string } } }).faucet;
}

/** The demo app's `chat` feature with an open fee (what a byok call is charged) and the given route policy. */
async function feature(routePolicy: 'platform_first' | 'byok_first') {
  await sql(
    testEnv,
    `update app_features set open_fee_usd = $1, route_policy = $2
      where feature_key = 'chat' and app_id = (select id from apps where public_app_id = 'app_demo_local')`,
    [fee, routePolicy],
  );
}

async function addKey(token: string): Promise<{ id: string; apiKey: string }> {
  const apiKey = fakeOpenAiKey();
  const response = await send(testEnv, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: apiKey }, token });
  expect(response.status).toBe(201);
  return { id: (response.body as { id: string }).id, apiKey };
}

describe('a byok call on the lease', () => {
  it("is authorized by the object with the end user's key, no gateway statement, charged the open fee and booked once with that key", async () => {
    await feature('platform_first');
    const session = await fundedSession(testEnv, '1.00000000');
    const key = await addKey(session.token);
    const upstream = answeringUpstream();
    const { gateway, counted } = countingGateway(upstream.fetch);

    for (let index = 0; index < 2; index++) {
      expect(await faucetOf(await chat(gateway, testEnv, session.token, byokCall))).toMatchObject({
        route_mode: 'byok',
        charge: { amount_usd: fee },
      });
    }
    expect(counted.statements).toBe(0);
    // The upstream was called with the end user's key, not the platform pool's.
    expect(upstream.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${key.apiKey}`, `Bearer ${key.apiKey}`]);

    await walletObjectOf(session.token).flush();
    const calls = await sql<{ route_mode: string; provider_credential_id: string; status: string; retail_usd: string }>(
      testEnv,
      `select g.route_mode, g.provider_credential_id, g.status, u.retail_usd::text
         from gateway_calls g join usage_events u on u.call_id = g.id where g.end_user_id = $1`,
      [session.endUserId],
    );
    expect(calls).toEqual([
      { route_mode: 'byok', provider_credential_id: key.id, status: 'settled', retail_usd: fee },
      { route_mode: 'byok', provider_credential_id: key.id, status: 'settled', retail_usd: fee },
    ]);
    await expectBooksAgree(testEnv, upstream.requests);
  });

  it('byok_first: a key added is taken by the very next call, a key disabled never again', async () => {
    await feature('byok_first');
    const session = await fundedSession(testEnv, '1.00000000');
    const upstream = answeringUpstream();
    const { gateway } = countingGateway(upstream.fetch);
    // No key yet: the platform route (and the object has read, and cached, that routing).
    expect((await faucetOf(await chat(gateway, testEnv, session.token, platformCall))).route_mode).toBe('platform');
    const key = await addKey(session.token);
    expect((await faucetOf(await chat(gateway, testEnv, session.token, platformCall))).route_mode).toBe('byok');
    const disabled = await send(testEnv, `/v1/user/provider-keys/${key.id}`, { method: 'DELETE', token: session.token });
    expect(disabled.status).toBe(200);
    expect((await faucetOf(await chat(gateway, testEnv, session.token, platformCall))).route_mode).toBe('platform');
    expect(upstream.requests.map((request) => request.headers.authorization === `Bearer ${key.apiKey}`)).toEqual([false, true, false]);
    await walletObjectOf(session.token).flush();
    await expectBooksAgree(testEnv, upstream.requests);
    await feature('platform_first');
  });

  it('never settled (its gateway died): booked at its bound, the open fee, with its key', async () => {
    await feature('platform_first');
    const session = await fundedSession(testEnv, '1.00000000');
    const key = await addKey(session.token);
    const object = walletObjectOf(session.token);
    const callId = crypto.randomUUID();
    const decision = await authorizeOnly(testEnv, session.token, {
      id: callId,
      clientRequestId: 'req_byok_never_settled',
      requestedRoute: 'byok',
    });
    expect(decision).toMatchObject({ outcome: 'authorized', routeMode: 'byok', routeKey: { id: key.id } });
    // Its worst case in flight is the open fee.
    expect((await object.snapshot()).committedUsd).toBe(fee);
    await sweepCallNow(session.token, callId);
    const booked = await sql<{ retail_usd: string; estimated: boolean; provider_credential_id: string; route_mode: string }>(
      testEnv,
      `select u.retail_usd::text, u.estimated, g.provider_credential_id, g.route_mode
         from usage_events u join gateway_calls g on g.id = u.call_id where u.call_id = $1`,
      [callId],
    );
    expect(booked).toEqual([{ retail_usd: fee, estimated: true, provider_credential_id: key.id, route_mode: 'byok' }]);
    await expectBooksAgree(testEnv, []);
  });

  it('a flushed byok record naming a key of another end user is refused, and nothing of it is booked', async () => {
    await feature('platform_first');
    const victim = await fundedSession(testEnv, '1.00000000');
    const victimKey = await addKey(victim.token);
    const attacker = await fundedSession(testEnv, '1.00000000');
    await addKey(attacker.token);
    const upstream = answeringUpstream();
    const { gateway } = countingGateway(upstream.fetch);
    expect((await faucetOf(await chat(gateway, testEnv, attacker.token, byokCall))).route_mode).toBe('byok');
    // The attacker's settled call, rewritten in the object's storage to name the victim's key.
    const object = walletObjectOf(attacker.token);
    await runInDurableObject(object, async (_instance, state) => {
      const stored = await state.storage.list<{ record: Record<string, unknown> }>({ prefix: 'call:' });
      for (const [name, call] of stored) {
        await state.storage.put(name, { ...call, record: { ...call.record, provider_credential_id: victimKey.id } });
      }
      await state.storage.sync();
      state.abort('reload the calls as stored');
    }).catch(() => undefined);
    const after = await walletObjectOf(attacker.token).flush();
    expect(after.refused).toBe(1);
    expect(await sql(testEnv, 'select 1 from usage_events where end_user_id = $1', [attacker.endUserId])).toEqual([]);
    expect(await sql(testEnv, 'select 1 from usage_events where end_user_id = $1', [victim.endUserId])).toEqual([]);
    // Nor is its record written: the object keeps the call as refused, an incident its snapshot shows.
    expect(await sql(testEnv, 'select status from gateway_calls where end_user_id = $1', [attacker.endUserId])).toEqual([]);
  });
});
