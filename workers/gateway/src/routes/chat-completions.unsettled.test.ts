/**
 * Settlement must not depend on `waitUntil` outliving the client (issue 12, defect 8): Cloudflare
 * ends that work ~30 s after the client leaves, so a long non-streaming call whose isolate ends
 * before its booking must still be billed. The call's durable record is booked by the API's sweeper
 * once its deadline and grace have passed; the gateway's own late booking is then a duplicate.
 */
import { createExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { sweepStaleCalls } from '#shared/calls/sweep-stale-calls.ts';
import { createDatabase, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { fundedSession, gatewayWith, holdStatus, newRequestId, usageRows, userMessage, wallet } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', CALL_SETTLE_GRACE_SECONDS: '1' });
});

async function sweep() {
  const { db, pool } = createDatabase(testEnv);
  try {
    return await sweepStaleCalls(db, testEnv);
  } finally {
    await pool.end();
  }
}

describe('a call whose isolate ended before its booking', () => {
  it('is booked by the sweeper at its bound once past its deadline, settles its hold, and is never charged twice', async () => {
    let answer: (response: Response) => void = () => undefined;
    const upstream = fakeUpstream(() => new Promise<Response>((resolve) => (answer = resolve)));
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    // The attacker starts a long call and leaves; the isolate is then ended (its promise is never awaited).
    const pending = app.fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('write a novel')], max_tokens: 500 }),
      }),
      testEnv,
      createExecutionContext(),
    );
    await expect.poll(() => upstream.requests.length).toBe(1);
    expect(await holdStatus(testEnv, requestId)).toBe('active');

    // Within its deadline the sweeper leaves it alone.
    expect(await sweep()).toEqual({ booked: 0, abandoned: 0 });
    expect(await usageRows(testEnv, requestId)).toEqual([]);

    await sql(testEnv, `update gateway_calls set deadline_at = now() - interval '1 hour' where client_request_id = $1`, [requestId]);
    expect(await sweep()).toEqual({ booked: 1, abandoned: 0 });
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: 500 });
    expect(row!.input_tokens).toBeGreaterThanOrEqual('write a novel'.length);
    expect(await holdStatus(testEnv, requestId)).toBe('settled');
    const [call] = await sql<{ status: string }>(testEnv, 'select status from gateway_calls where client_request_id = $1', [requestId]);
    expect(call?.status).toBe('settled');
    const afterSweep = await wallet(testEnv, session.walletId);
    expect(afterSweep.held).toBe('0.00000000');

    // The upstream answers after all: the gateway's own booking is the same money key, so no second charge.
    answer(jsonResponse(openAiCompletion('late')));
    await Promise.resolve(pending).catch(() => undefined);
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await wallet(testEnv, session.walletId)).toEqual(afterSweep);
    expect(await sweep()).toEqual({ booked: 0, abandoned: 0 });
  });

  it('abandons, without charge, a stale call that never got a route', async () => {
    const session = await fundedSession(testEnv, '0.00000000');
    const requestId = newRequestId();
    const response = await gatewayWith().fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('hi')], route_mode: 'byok' }),
      }),
      testEnv,
      createExecutionContext(),
    );
    expect(response.status).toBe(400);
    // Simulate the refusal's own abandon having been lost with its connection.
    await sql(
      testEnv,
      `update gateway_calls set status = 'in_flight', deadline_at = now() - interval '1 hour' where client_request_id = $1`,
      [requestId],
    );
    expect(await sweep()).toEqual({ booked: 0, abandoned: 1 });
    expect(await usageRows(testEnv, requestId)).toEqual([]);
  });
});
