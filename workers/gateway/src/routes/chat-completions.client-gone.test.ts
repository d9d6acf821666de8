import { beforeAll, describe, expect, it } from 'vitest';
import type { TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  usageRows,
  userMessage,
  wallet,
  allRegistered,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

describe('a client that goes away during a non-streaming call', () => {
  it('does not stop the call from being settled: upstream and booking run under waitUntil', async () => {
    let answerUpstream!: () => void;
    const upstreamAnswered = new Promise<void>((resolve) => (answerUpstream = resolve));
    const upstream = fakeUpstream(async () => {
      await upstreamAnswered;
      return jsonResponse(openAiCompletion('late answer'));
    });
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const background: Promise<unknown>[] = [];
    const ctx = {
      waitUntil: (work: Promise<unknown>) => void background.push(work),
      passThroughOnException: () => {},
      props: {},
    } as unknown as ExecutionContext;

    const responding = gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
      new Request('http://faucet.test/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('hi')] }),
      }),
      testEnv,
      ctx,
    );
    // While the upstream is still thinking, the work is already registered to outlive the request.
    for (let attempt = 0; attempt < 100 && upstream.requests.length === 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(upstream.requests).toHaveLength(1);
    expect(background.length).toBeGreaterThanOrEqual(1);

    // The client is gone (its response is never read); the registered work still books the call.
    answerUpstream();
    await allRegistered(background);
    await settled(testEnv);
    // Booked once, and its worst case no longer held.
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });
    await responding;
  });
});
