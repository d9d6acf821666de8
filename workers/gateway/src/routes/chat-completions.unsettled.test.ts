/**
 * Settlement must not depend on `waitUntil` outliving the client: Cloudflare ends that work ~30 s
 * after the client leaves, so a long non-streaming call whose isolate ends before its booking must
 * still be billed. A call authorized on its wallet object's lease is booked at its bound by that
 * object once its deadline and grace have passed; one authorized per call, by the API's sweeper from
 * its durable record. The gateway's own late settlement is then a duplicate.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { WalletSettlement } from '#shared/durable-objects.ts';
import { compareUsd, zeroUsd } from '#shared/money/index.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { callsKeptBy, sweepCallNow, walletObjectOf } from '../../../test/wallet-kit.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  settled,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', CALL_SETTLE_GRACE_SECONDS: '1' });
});

/**
 * The wallet objects as the gateway reaches them, each settlement it sends recorded (the call, the
 * settlement, whether the object took it).
 */
function recordingSettlements(env: TestEnv) {
  const namespace = env.WALLET as NonNullable<TestEnv['WALLET']>;
  const settlements: Array<{ callId: string; settlement: WalletSettlement; taken: boolean }> = [];
  const WALLET = {
    idFromName: (name: string) => namespace.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = namespace.get(id);
      return new Proxy(stub, {
        get: (target, property) =>
          property === 'settle'
            ? (callId: string, settlement: WalletSettlement) =>
                target.settle(callId, settlement).then(
                  () => void settlements.push({ callId, settlement, taken: true }),
                  (error: unknown) => {
                    settlements.push({ callId, settlement, taken: false });
                    throw error;
                  },
                )
            : Reflect.get(target, property),
      });
    },
  } as unknown as TestEnv['WALLET'];
  return { env: { ...env, WALLET }, settlements };
}

/**
 * The attacker starts a long call (max_tokens 500) and leaves; the isolate is then ended (its promise
 * is never awaited). `answer` makes the upstream answer after all.
 */
async function callLeftRunning(env: TestEnv, token: string) {
  let answer: (response: Response) => void = () => undefined;
  const upstream = fakeUpstream(() => new Promise<Response>((resolve) => (answer = resolve)));
  const requestId = newRequestId();
  const pending = gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
    new Request('http://faucet.test/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
      body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('write a novel')], max_tokens: 500 }),
    }),
    env,
    createExecutionContext(),
  );
  await expect.poll(() => upstream.requests.length).toBe(1);
  return {
    requestId,
    answerLate: async () => {
      answer(jsonResponse(openAiCompletion('late')));
      await Promise.resolve(pending).catch(() => undefined);
    },
  };
}

/** Booked once at its bound (estimated, every output token of max_tokens), its worst case no longer held, its record settled. */
async function expectBookedAtBound(session: { walletId: string }, requestId: string) {
  const [row, ...others] = await usageRows(testEnv, requestId);
  expect(others).toEqual([]);
  expect(row).toMatchObject({ estimated: true, output_tokens: 500 });
  expect(row!.input_tokens).toBeGreaterThanOrEqual('write a novel'.length);
  const [call] = await sql<{ status: string }>(testEnv, 'select status from gateway_calls where client_request_id = $1', [requestId]);
  expect(call?.status).toBe('settled');
  const afterSweep = await wallet(testEnv, session.walletId);
  expect(afterSweep.held).toBe('0.00000000');
  return afterSweep;
}

describe('a call whose isolate ended before its booking', () => {
  it('is booked by its wallet object at its bound once past its deadline, and its late settlement never charges twice', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const recording = recordingSettlements(testEnv);
    const { requestId, answerLate } = await callLeftRunning(recording.env, session.token);
    expect(compareUsd(await heldForCalls(testEnv, session), zeroUsd())).toBeGreaterThan(0);

    // Within its deadline nothing books it.
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toEqual([]);

    const [callId, ...others] = await callsKeptBy(session.token);
    expect(others).toEqual([]);
    await sweepCallNow(session.token, callId!);
    await settled(testEnv);
    const afterSweep = await expectBookedAtBound(session, requestId);

    // The upstream answers after all. The gateway's settlement reaches an object restarted by the
    // sweep through a stub the restart broke, so it is delivered again on a new one, as a retry would.
    await answerLate();
    await expect.poll(() => recording.settlements.length).toBeGreaterThan(0);
    const [late] = recording.settlements;
    expect(late?.callId).toBe(callId);
    if (!late!.taken) await walletObjectOf(session.token).settle(late!.callId, late!.settlement);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await wallet(testEnv, session.walletId)).toEqual(afterSweep);
  });
});
