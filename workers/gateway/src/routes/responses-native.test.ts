/**
 * `POST /v1/responses` to OpenAI goes to OpenAI's own Responses API, as the client wrote it: its
 * events and response come back unchanged (ids, reasoning items, sequence), with the `faucet` object
 * on the final response, and the call is booked at the usage OpenAI reported (cached input and
 * reasoning included). Each ends on the upstream audit and reconciliation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, sseResponse } from '../../../test/fake-upstream.ts';
import { fundedSession, gatewayTestEnv, gatewayWith, newRequestId, postToGateway, settled, wallet } from '../../../test/gateway-kit.ts';
import { upstreamEvents, upstreamResponse, upstreamSse, upstreamUsage } from '../../../test/responses-kit.ts';
import { send as sendToApi } from '../../../test/provider-keys-kit.ts';
import { expectBooksAgree } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const reported = {
  prompt_tokens: upstreamUsage.input_tokens,
  completion_tokens: upstreamUsage.output_tokens,
  total_tokens: upstreamUsage.total_tokens,
};

async function send(upstream: ReturnType<typeof fakeUpstream>, body: Record<string, unknown>) {
  const session = await fundedSession(testEnv, '1.00000000');
  const requestId = newRequestId();
  const answer = await postToGateway(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, '/v1/responses', body, {
    authorization: `Bearer ${session.token}`,
    'x-request-id': requestId,
  });
  return { answer, requestId, session };
}

/**
 * The call is booked once at the usage OpenAI reported, its cached input and reasoning apart (30 in,
 * 10 of them cached; 20 out, 5 of them reasoning), and the upstream audit and reconciliation agree.
 */
async function expectBookedAsOpenAiReported(requestId: string, upstream: ReturnType<typeof fakeUpstream>) {
  await settled(testEnv);
  const rows = await sql<{
    input_tokens: number;
    cached_tokens: number;
    output_tokens: number;
    reasoning_tokens: number;
    estimated: boolean;
  }>(
    testEnv,
    'select input_tokens, cached_tokens, output_tokens, reasoning_tokens, estimated from usage_events where client_request_id = $1',
    [requestId],
  );
  expect(rows).toEqual([{ input_tokens: 30, cached_tokens: 10, output_tokens: 20, reasoning_tokens: 5, estimated: false }]);
  await expectBooksAgree(testEnv, upstream.requests, () => reported);
}

describe('the Responses API to OpenAI, natively', () => {
  it("streamed: OpenAI's events pass through unchanged, the final response carries the faucet object; booked at OpenAI's usage", async () => {
    const events = upstreamEvents();
    const upstream = fakeUpstream(() => sseResponse(upstreamSse(events)));
    const { answer, requestId } = await send(upstream, {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'Hi' }],
      max_output_tokens: 100,
      stream: true,
    });
    expect(answer.status).toBe(200);

    // What OpenAI got: the request as written, Faucet's fields left out, never stored.
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]?.url).toBe('https://api.openai.com/v1/responses');
    expect(upstream.requests[0]?.headers.authorization).toBe('Bearer sk-platform-pool-test');
    expect(upstream.requests[0]?.body).toEqual({
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'Hi' }],
      max_output_tokens: 100,
      stream: true,
      store: false,
    });

    const sent = answer.text
      .split('\n\n')
      .filter((block) => block.trim() !== '')
      .map((block) => ({
        event: /^event: (.*)$/m.exec(block)?.[1],
        data: JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, any>,
      }));
    // Every event of OpenAI's, in its order, as it sent it (the reasoning summary too); the final one with the faucet object.
    expect(sent.map(({ data }) => data)).toEqual(
      events.map((event, index) =>
        index === events.length - 1 ? { ...event, response: { ...(event.response as object), faucet: expect.any(Object) } } : event,
      ),
    );
    for (const { event, data } of sent) expect(event).toBe(data.type);
    const final = sent.at(-1)?.data;
    expect(final?.response.id).toBe('resp_upstream_1');
    expect(final?.response.faucet).toMatchObject({ request_id: requestId, provider: 'openai', model: 'gpt-4o-mini', estimated: false });

    await expectBookedAsOpenAiReported(requestId, upstream);
  });

  it("not streamed, on a model that reasons: OpenAI's response as it is, with the faucet object", async () => {
    const upstream = fakeUpstream(() => jsonResponse(upstreamResponse('completed', 'o4-mini-2025-04-16')));
    const { answer, requestId } = await send(upstream, { model: 'openai:o4-mini', input: 'Hi', reasoning: { effort: 'low' } });
    expect(answer.status).toBe(200);
    // A model that reasons out of sight is not cut: answered whole by OpenAI, not streamed.
    expect(upstream.requests[0]?.body).toMatchObject({
      model: 'o4-mini',
      input: 'Hi',
      reasoning: { effort: 'low' },
      stream: false,
      store: false,
    });
    const { faucet, ...response } = answer.json();
    expect(response).toEqual(upstreamResponse('completed', 'o4-mini-2025-04-16'));
    expect(faucet).toMatchObject({ request_id: requestId, model: 'o4-mini', input_tokens: 30, output_tokens: 20, estimated: false });
    await expectBookedAsOpenAiReported(requestId, upstream);
  });

  it('an error event mid-stream: response.failed then error, in the Responses words; nothing delivered, nothing booked', async () => {
    const upstream = fakeUpstream(() => sseResponse(upstreamSse(upstreamEvents({ failAfterCreated: true }))));
    const { answer, requestId, session } = await send(upstream, { model: 'openai:gpt-4o-mini', input: 'Hi', stream: true });
    expect(answer.status).toBe(200);
    const types = [...answer.text.matchAll(/^event: (.*)$/gm)].map((match) => match[1]);
    expect(types).toEqual(['response.created', 'response.failed', 'error']);
    expect(answer.text).toContain('"code":"upstream_error"');
    await settled(testEnv);
    const [row] = await sql<{ n: string }>(testEnv, 'select count(*) as n from usage_events where client_request_id = $1', [requestId]);
    expect(row?.n).toBe('0');
    // The provider bills no failed generation: the hold is released and the balance whole.
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ balance: '1.00000000', held: '0.00000000' });
  });

  it("to Azure with an end user's own key: its v1 Responses API at the registered resource, with that key; booked on it", async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const azureKey = `az${crypto.randomUUID().replaceAll('-', '')}`;
    const stored = await sendToApi(testEnv, '/v1/user/provider-keys', {
      json: {
        provider: 'azure',
        api_key: azureKey,
        base_url: 'https://contoso-user.openai.azure.com/openai?api-version=2025-01-01-preview',
      },
      token: session.token,
    });
    expect(stored.status).toBe(201);
    const upstream = fakeUpstream(() => jsonResponse(upstreamResponse('completed', 'gpt-4o-mini')));
    const requestId = newRequestId();
    const answer = await postToGateway(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      '/v1/responses',
      { model: 'azure:gpt-4o-mini', route_mode: 'byok', input: 'Hi', max_output_tokens: 50 },
      { authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
    );
    expect(answer.status).toBe(200);
    expect(upstream.requests.map((request) => request.url)).toEqual(['https://contoso-user.openai.azure.com/openai/v1/responses']);
    expect(upstream.requests[0]?.headers['api-key']).toBe(azureKey);
    expect(upstream.requests[0]?.headers.authorization).toBeUndefined();
    // The deployment is the model, as on Azure's chat route; the answer is Azure's response as it is.
    expect(upstream.requests[0]?.body).toEqual({ model: 'gpt-4o-mini', input: 'Hi', max_output_tokens: 50, stream: false, store: false });
    const { faucet, ...response } = answer.json();
    expect(response).toEqual(upstreamResponse('completed', 'gpt-4o-mini'));
    expect(faucet).toMatchObject({ route_mode: 'byok', provider: 'azure', model: 'gpt-4o-mini' });
    expect(JSON.stringify(answer.json())).not.toContain(azureKey);
    await settled(testEnv);
    const [row] = await sql<{ provider_credential_id: string; provider: string }>(
      testEnv,
      'select provider_credential_id::text, provider from usage_events where client_request_id = $1',
      [requestId],
    );
    expect(row).toEqual({ provider_credential_id: stored.body.id, provider: 'azure' });
  });
});
