/**
 * A settlement rides on the next call's `authorize` (wallet/unsent-settlements.ts): a call of the same
 * wallet that follows an answer within the grace carries that answer's settlement to the object, which
 * takes it before judging the new call and answers only once it is durable; the answered call then
 * sends no message of its own. Written as the failure: an `authorize` that never reaches the object
 * leaves each settlement it carried to its own call, so none is lost to the bound booking.
 */
import { createExecutionContext, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { readSettlingMs, settlementGraceMs, type WalletCallRequest, type WalletObjectContract } from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { api, call, sql, type TestEnv } from '../../../test/harness.ts';
import { fundedSession, gatewayWith, newRequestId } from '../../../test/gateway-kit.ts';
import { fakeUpstream } from '../../../test/fake-upstream.ts';
import { answeringUpstream, callsKeptBy, expectBooksAgree, leasedTestEnv, platformCall, walletObjectOf } from '../../../test/wallet-kit.ts';
import type { StoredCall } from './lease-book.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await leasedTestEnv();
});

type Stub = Pick<WalletObjectContract, 'authorize' | 'abandon' | 'settle'>;

/**
 * The test env with every wallet object's `authorize` passed through `authorize` (which gets the real
 * stub's) and each `settle` message recorded by call id in `settles`.
 */
function observed(
  authorize: (request: WalletCallRequest, real: Stub['authorize']) => ReturnType<Stub['authorize']>,
  onTheWay: () => Promise<void> = async () => undefined,
) {
  const objects = testEnv.WALLET as DurableObjectNamespace<WalletObjectContract>;
  const settles: string[] = [];
  const wrapped = {
    idFromName: (name: string) => objects.idFromName(name),
    get: (id: DurableObjectId): Stub => {
      const stub = objects.get(id);
      return {
        authorize: (request) => authorize(request, (forwarded) => stub.authorize(forwarded)),
        abandon: (callId, log) => stub.abandon(callId, log),
        settle: async (callId, settlement) => {
          settles.push(callId);
          await onTheWay();
          return stub.settle(callId, settlement);
        },
      };
    },
  };
  return { env: { ...testEnv, WALLET: wrapped as unknown as Env['WALLET'] } as TestEnv, settles };
}

function platformCallRequest(token: string): Request {
  return new Request('http://faucet.test/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': newRequestId() },
    body: JSON.stringify(platformCall),
  });
}

/** Two calls of one end user, the second sent as soon as the first is answered (within the grace); returns once both requests are done. */
async function oneCallThenAnother(env: TestEnv, token: string, fake: ReturnType<typeof answeringUpstream>) {
  const gateway = gatewayWith({ upstreamFetch: fake.fetch });
  const firstCtx = createExecutionContext();
  const first = await gateway.fetch(platformCallRequest(token), env, firstCtx);
  expect(first.status).toBe(200);
  const secondCtx = createExecutionContext();
  const second = await gateway.fetch(platformCallRequest(token), env, secondCtx);
  await waitOnExecutionContext(firstCtx);
  await waitOnExecutionContext(secondCtx);
  return { first, second, firstId: first.headers.get('x-faucet-call-id') as string };
}

const chargeOf = async (response: Response) =>
  ((await response.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd;

/** How many reads wait in the object for settlements on their way. */
const readsWaitingIn = (object: ReturnType<typeof walletObjectOf>) =>
  runInDurableObject(
    object,
    (instance) => (instance as unknown as { state: { waitingForSettlement: unknown[] } }).state.waitingForSettlement.length,
  );

const bookedRetails = async (endUserId: string) =>
  (
    await sql<{ retail_usd: string }>(testEnv, 'select retail_usd::text from usage_events where end_user_id = $1 order by created_at', [
      endUserId,
    ])
  ).map((row) => row.retail_usd);

describe('a settlement carried by the next call of its wallet', () => {
  it('reaches the object in that call’s authorize, sends no message of its own, and is booked once at its charge', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = answeringUpstream();
    const carried: string[] = [];
    const { env, settles } = observed((request, authorize) => {
      carried.push(...(request.settlements ?? []).map(([callId]) => callId));
      return authorize(request);
    });
    const { first, second, firstId } = await oneCallThenAnother(env, session.token, fake);
    expect(second.status).toBe(200);
    // The second call's authorize carried the first call's settlement; only the second's went as a
    // message of its own (no later call carried it).
    expect(carried).toEqual([firstId]);
    expect(settles).toEqual([second.headers.get('x-faucet-call-id')]);
    const object = walletObjectOf(session.token);
    expect(await object.snapshot()).toMatchObject({ inFlight: 0, unflushed: 2 });
    await object.flush();
    expect(await bookedRetails(session.endUserId)).toEqual([await chargeOf(first), await chargeOf(second)]);
    await expectBooksAgree(testEnv, [...fake.requests]);
  });

  it('is sent by its own call when the authorize that carried it never reached the object: booked at its charge, not at its bound', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = answeringUpstream();
    let authorizes = 0;
    const { env, settles } = observed((request, authorize) => {
      authorizes += 1;
      // The second call's message is lost on its way, settlements and all.
      if (authorizes === 2) return Promise.reject(new Error('the authorize never reached the object')) as ReturnType<Stub['authorize']>;
      return authorize(request);
    });
    const { first, second, firstId } = await oneCallThenAnother(env, session.token, fake);
    expect(second.status).toBeGreaterThanOrEqual(500);
    const charge = await chargeOf(first);
    expect(settles).toEqual([firstId]);
    const object = walletObjectOf(session.token);
    expect(await object.snapshot()).toMatchObject({ inFlight: 0, unflushed: 1, unflushedUsd: charge });
    await object.flush();
    expect(await bookedRetails(session.endUserId)).toEqual([charge]);
    // The second call never reached the upstream.
    expect(fake.requests).toHaveLength(1);
    await expectBooksAgree(testEnv, [...fake.requests]);
  });

  it('is in a read of the end user’s own calls made meanwhile: the object waits for the settlement on its way', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = answeringUpstream();
    let deliver: () => void = () => undefined;
    const delivered = new Promise<void>((resolve) => {
      deliver = resolve;
    });
    // The answered call's own message is held on its way until the read waits in the object.
    const { env } = observed(
      (request, authorize) => authorize(request),
      () => delivered,
    );
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const ctx = createExecutionContext();
    const charge = await chargeOf(await gateway.fetch(platformCallRequest(session.token), env, ctx));
    const object = walletObjectOf(session.token);
    const read = object.flush(60_000);
    for (let tries = 0; (await readsWaitingIn(object)) === 0; tries++) {
      if (tries > 500) throw new Error('the read never waited for the settlement on its way');
    }
    deliver();
    expect(await read).toMatchObject({ inFlight: 0, unflushed: 0, error: null });
    expect(await bookedRetails(session.endUserId)).toEqual([charge]);
    await waitOnExecutionContext(ctx);
    await expectBooksAgree(testEnv, [...fake.requests]);
  });

  it('a read waiting for a call that never settles ends when the alarm books that call at its bound, not when its time is out', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    // The call's isolate is lost mid-call: no answer comes, and no settlement.
    const upstream = fakeUpstream(() => new Promise<Response>(() => undefined));
    void Promise.resolve(
      gatewayWith({ upstreamFetch: upstream.fetch }).fetch(platformCallRequest(session.token), testEnv, createExecutionContext()),
    ).catch(() => undefined);
    await expect.poll(() => upstream.requests.length).toBe(1);
    const [callId] = await callsKeptBy(session.token);
    const object = walletObjectOf(session.token);
    const read = object.flush(60_000);
    for (let tries = 0; (await readsWaitingIn(object)) === 0; tries++) {
      if (tries > 500) throw new Error('the read never waited for the call in flight');
    }
    // Its deadline and grace pass; the alarm books it at its bound.
    await runInDurableObject(object, (instance) => {
      const { calls } = (instance as unknown as { state: { calls: Map<string, StoredCall> } }).state;
      calls.set(callId!, { ...calls.get(callId!)!, sweepAt: Date.now() - 1 });
    });
    expect(await runDurableObjectAlarm(object)).toBe(true);
    const stillWaiting = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000));
    expect(await Promise.race([read, stillWaiting])).toMatchObject({ inFlight: 0, unflushed: 0, error: null });
    const booked = await sql<{ estimated: boolean }>(testEnv, 'select estimated from usage_events where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(booked).toEqual([{ estimated: true }]);
  });

  it('is waited for by the API’s reads of the end user’s own calls, a few times the gateway’s grace', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const objects = testEnv.WALLET as DurableObjectNamespace<WalletObjectContract>;
    const asked: unknown[] = [];
    const recording = {
      idFromName: (name: string) => objects.idFromName(name),
      get: (id: DurableObjectId) => ({
        flush: (settlingMs?: number) => {
          asked.push(settlingMs);
          return objects.get(id).flush(settlingMs);
        },
      }),
    };
    const env = { ...testEnv, WALLET: recording as unknown as Env['WALLET'] } as TestEnv;
    expect((await call(api(), env, '/v1/user/wallet', { token: session.token })).status).toBe(200);
    expect((await call(api(), env, '/v1/user/usage', { token: session.token })).status).toBe(200);
    expect(asked).toEqual([readSettlingMs, readSettlingMs]);
    expect(readSettlingMs).toBeGreaterThanOrEqual(3 * settlementGraceMs);
  });
});
