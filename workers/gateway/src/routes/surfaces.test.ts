/**
 * The APIs clients already speak, each on the one pipeline: `POST /v1/responses` (OpenAI Responses),
 * `POST /v1/messages` and `/v1/messages/count_tokens` (Anthropic Messages), `POST /v1/embeddings`.
 * Written as a client would call them, against a fake upstream that reports its own tokens: each
 * served call is booked once with the provider's tokens (the upstream audit and reconciliation end
 * each suite); each refusal is in the surface's own envelope, sends nothing and holds nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sql, type TestEnv } from '../../../test/harness.ts';
import {
  fakeUpstream,
  jsonResponse,
  openAiChunk,
  openAiCompletion,
  openAiSse,
  sseResponse,
  type FakeUpstream,
} from '../../../test/fake-upstream.ts';
import {
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  postToGateway,
  settled,
  usageRows,
} from '../../../test/gateway-kit.ts';
import { expectBooksAgree } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    MISTRAL_API_KEY: 'sk-mistral-pool-test',
    ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test',
    // The host as the Anthropic SDK and Claude Code name it: the pool calls `<root>/v1/messages`.
    ANTHROPIC_BASE_URL: 'https://anthropic-proxy.example.com/',
  });
});

type Body = Record<string, unknown>;

/** A POST to the gateway as a client sends it, kept alive until its work under waitUntil is done. */
const post = (app: ReturnType<typeof gatewayWith>, path: string, body: unknown, headers: Record<string, string>) =>
  postToGateway(app, testEnv, path, body, headers);

/** The `event:` / `data:` pairs of an SSE body. */
function events(text: string): Array<{ event: string | null; data: Body | string }> {
  return text
    .split(/\n\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '')
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1] ?? null;
      const data = /^data: (.+)$/m.exec(block)?.[1] ?? '';
      return { event, data: data.startsWith('{') ? (JSON.parse(data) as Body) : data };
    });
}

const answering = (content = 'hello') => fakeUpstream(() => jsonResponse(openAiCompletion(content)));
const streaming = () =>
  fakeUpstream(() =>
    sseResponse(
      openAiSse([
        openAiChunk({ role: 'assistant', content: 'Hel' }),
        openAiChunk({ content: 'lo' }),
        openAiChunk({}, 'stop'),
        openAiChunk({}, null, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }),
      ]),
    ),
  );

/** Booked once with the tokens the fake provider reported, and the books agree (reconciliation, upstream audit). */
async function expectBilledAsReported(requestId: string, upstream: FakeUpstream, tokens: { input: number; output: number }) {
  await settled(testEnv);
  const rows = await usageRows(testEnv, requestId);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ input_tokens: tokens.input, output_tokens: tokens.output, estimated: false });
  await expectBooksAgree(testEnv, upstream.requests, () => ({
    prompt_tokens: tokens.input,
    completion_tokens: tokens.output,
    total_tokens: 0,
  }));
}

describe('POST /v1/responses', () => {
  const ask = { model: 'openai:gpt-4o-mini', instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 50 };

  it('answers a response object with the text, the usage and the faucet object; booked with the provider’s tokens', async () => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(gatewayWith({ upstreamFetch: upstream.fetch }), '/v1/responses', ask, {
      authorization: `Bearer ${session.token}`,
      'x-request-id': requestId,
    });
    expect(answer.status).toBe(200);
    const body = answer.json();
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 },
    });
    expect(body.output).toMatchObject([{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] }]);
    expect(body.faucet).toMatchObject({ request_id: requestId, route_mode: 'platform', charge: { currency: 'USD' } });
    // Sent to OpenAI natively, as written, never stored there (its 50 output tokens fit its first quota: not streamed).
    expect(upstream.requests[0]?.url).toBe('https://api.openai.com/v1/responses');
    expect(upstream.requests[0]?.body).toEqual({
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: 'Say hello',
      max_output_tokens: 50,
      stream: false,
      store: false,
    });
    await expectBilledAsReported(requestId, upstream, { input: 11, output: 7 });
  });

  it('to a provider without the Responses API: translated through chat, the instructions as a system message', async () => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/responses',
      { ...ask, model: 'mistral:mistral-small-latest' },
      { authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
    );
    expect(answer.status).toBe(200);
    expect(answer.json()).toMatchObject({
      object: 'response',
      status: 'completed',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] }],
      usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 },
    });
    expect(upstream.requests[0]?.url).toBe('https://api.mistral.ai/v1/chat/completions');
    expect(upstream.requests[0]?.body).toMatchObject({
      model: 'mistral-small-latest',
      max_tokens: 50,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello' },
      ],
    });
    // Mistral gets no x-client-request-id, so no upstream audit here: its booking is the reported count.
    expect(answer.json().faucet).toMatchObject({ request_id: requestId, input_tokens: 11, output_tokens: 7, estimated: false });
  });

  it('streams its typed events, ending on response.completed with the usage and the faucet object; booked once', async () => {
    const session = await fundedSession(testEnv);
    const upstream = streaming();
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/responses',
      { ...ask, stream: true },
      {
        authorization: `Bearer ${session.token}`,
        'x-request-id': requestId,
      },
    );
    expect(answer.status).toBe(200);
    const sent = events(answer.text);
    const types = sent.map((event) => event.event);
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types.at(-1)).toBe('response.completed');
    const deltas = sent.filter((event) => event.event === 'response.output_text.delta').map((event) => (event.data as Body).delta);
    expect(deltas.join('')).toBe('Hello');
    const completed = sent.at(-1)?.data as { response: Body };
    expect(completed.response).toMatchObject({ status: 'completed', usage: { input_tokens: 11, output_tokens: 7 } });
    expect(completed.response.faucet).toMatchObject({ request_id: requestId });
    const sequence = sent.map((event) => (event.data as Body).sequence_number);
    expect(sequence).toEqual(sequence.map((_, index) => index));
    await expectBilledAsReported(requestId, upstream, { input: 11, output: 7 });
  });

  it.each<[string, Body]>([
    ['a built-in tool', { tools: [{ type: 'web_search' }] }],
    ['previous_response_id (nothing is stored)', { previous_response_id: 'resp_123' }],
    ['store: true', { store: true }],
  ])('refuses %s with 400 naming it: nothing sent, held or booked', async (_case, extra) => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/responses',
      { ...ask, ...extra },
      {
        authorization: `Bearer ${session.token}`,
        'x-request-id': requestId,
      },
    );
    expect(answer.status).toBe(400);
    expect(answer.json()).toMatchObject({ error: { code: 'invalid_request', request_id: requestId } });
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });

  it('refuses a request without a live session with 401, whatever its body', async () => {
    const upstream = answering();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/responses',
      { tools: [{ type: 'web_search' }] },
      {
        authorization: `Bearer fvs_${'A'.repeat(43)}`,
      },
    );
    expect(answer.status).toBe(401);
    expect(upstream.requests).toEqual([]);
  });
});

describe('POST /v1/messages', () => {
  const ask = { model: 'openai:gpt-4o-mini', max_tokens: 50, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello' }] };
  const anthropic = (token: string, requestId = newRequestId()) => ({
    'x-api-key': token,
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    'x-request-id': requestId,
  });

  it('answers a Message with the session token as x-api-key; booked with the provider’s tokens', async () => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/messages?beta=true',
      ask,
      anthropic(session.token, requestId),
    );
    expect(answer.status).toBe(200);
    expect(answer.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'hello' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 11, output_tokens: 7 },
      faucet: { request_id: requestId },
    });
    await expectBilledAsReported(requestId, upstream, { input: 11, output: 7 });
  });

  it('takes the token as Authorization: Bearer too (Claude Code’s ANTHROPIC_AUTH_TOKEN), and streams its events', async () => {
    const session = await fundedSession(testEnv);
    const upstream = streaming();
    const requestId = newRequestId();
    const { 'x-api-key': _key, ...headers } = anthropic(session.token, requestId);
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/messages',
      { ...ask, stream: true },
      {
        ...headers,
        authorization: `Bearer ${session.token}`,
      },
    );
    expect(answer.status).toBe(200);
    const sent = events(answer.text);
    const types = sent.map((event) => event.event).filter((type) => type !== 'ping');
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_delta');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const text = sent
      .filter((event) => event.event === 'content_block_delta')
      .map((event) => ((event.data as Body).delta as Body).text)
      .join('');
    expect(text).toBe('Hello');
    expect(sent.find((event) => event.event === 'message_delta')?.data).toMatchObject({ usage: { output_tokens: 7 } });
    await expectBilledAsReported(requestId, upstream, { input: 11, output: 7 });
  });

  it.each<[string, (token: string) => Record<string, string>, number, string]>([
    ['no anthropic-version', (token) => ({ 'x-api-key': token }), 400, 'invalid_request_error'],
    [
      'a beta that changes the price',
      (token) => ({ ...anthropic(token), 'anthropic-beta': 'context-1m-2025-08-07' }),
      400,
      'invalid_request_error',
    ],
    ['an unknown session', () => anthropic(`fvs_${'A'.repeat(43)}`), 401, 'authentication_error'],
  ])('refuses %s in Anthropic’s envelope, carrying request_id: nothing sent', async (_case, headersOf, status, type) => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const answer = await post(gatewayWith({ upstreamFetch: upstream.fetch }), '/v1/messages', ask, headersOf(session.token));
    expect(answer.status).toBe(status);
    const body = answer.json();
    expect(body).toMatchObject({ type: 'error', error: { type } });
    expect(body.request_id).toBe(answer.headers.get('x-request-id'));
    expect(upstream.requests).toEqual([]);
  });

  it('refuses a wallet that cannot cover the call with 402 in Anthropic’s envelope (billing_error): nothing sent or booked', async () => {
    const session = await fundedSession(testEnv, '0.00000000');
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(gatewayWith({ upstreamFetch: upstream.fetch }), '/v1/messages', ask, anthropic(session.token, requestId));
    expect(answer.status).toBe(402);
    expect(answer.json()).toMatchObject({
      type: 'error',
      error: { type: 'billing_error', code: 'insufficient_balance' },
      request_id: requestId,
    });
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });

  describe('on an Anthropic model: Claude Code’s tool loop with thinking', () => {
    const signature = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrk';
    const tool = { name: 'Read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };
    const claudeCode = {
      model: 'anthropic:claude-haiku-4-5',
      max_tokens: 32_000,
      thinking: { type: 'enabled', budget_tokens: 31_999 },
      tools: [tool],
      stream: true,
      metadata: { user_id: '{"session":"x"}' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    };
    const firstTurn = [
      { type: 'message_start', message: { id: 'msg_1', model: 'claude-haiku-4-5', usage: { input_tokens: 40, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'I should read it.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"path":"a.txt"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 61 } },
      { type: 'message_stop' },
    ];
    const anthropicSse = (turn: Body[]) => sseResponse(turn.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
    /** Anthropic's own check: with thinking on, the assistant turn of a tool loop must start with its signed thinking. */
    const checksThinking = () =>
      fakeUpstream((request) => {
        const body = request.body as { messages: Array<{ role: string; content: Body[] }> };
        const lastAssistant = body.messages.filter((message) => message.role === 'assistant').at(-1);
        if (lastAssistant === undefined) return anthropicSse(firstTurn);
        if (lastAssistant.content[0]?.type !== 'thinking' || lastAssistant.content[0]?.signature !== signature) {
          return jsonResponse({ type: 'error', error: { type: 'invalid_request_error', message: 'Expected `thinking`' } }, 400);
        }
        return anthropicSse([
          { type: 'message_start', message: { id: 'msg_2', model: 'claude-haiku-4-5', usage: { input_tokens: 90, output_tokens: 1 } } },
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'It says hello.' } },
          { type: 'content_block_stop', index: 0 },
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
          { type: 'message_stop' },
        ]);
      });

    it('streams the thinking with its signature; sent back, it reaches Anthropic as written; each turn booked as reported', async () => {
      const session = await fundedSession(testEnv);
      const upstream = checksThinking();
      const app = gatewayWith({ upstreamFetch: upstream.fetch });
      const ask = { role: 'user', content: 'Read a.txt' };
      const first = newRequestId();
      const answer = await post(app, '/v1/messages?beta=true', { ...claudeCode, messages: [ask] }, anthropic(session.token, first));
      expect(answer.status).toBe(200);
      const sent = events(answer.text).filter((event) => event.event !== 'ping');
      const blocks = sent.filter((event) => event.event === 'content_block_start').map((event) => (event.data as Body).content_block);
      expect(blocks).toEqual([
        { type: 'thinking', thinking: '', signature: '' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} },
      ]);
      const deltas = sent.filter((event) => event.event === 'content_block_delta').map((event) => (event.data as Body).delta);
      expect(deltas).toContainEqual({ type: 'signature_delta', signature });
      // Sent to the pool's root with the client's exact thinking budget.
      expect(upstream.requests[0]?.url).toBe('https://anthropic-proxy.example.com/v1/messages');
      expect(upstream.requests[0]?.body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 31_999 }, max_tokens: 32_000 });

      // The second turn, as Claude Code sends it: the thinking block back with its signature, then the tool's result.
      const second = newRequestId();
      const loop = {
        ...claudeCode,
        messages: [
          ask,
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'I should read it.', signature },
              { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello' }] },
        ],
      };
      const answered = await post(app, '/v1/messages?beta=true', loop, anthropic(session.token, second));
      expect(answered.status).toBe(200);
      const text = events(answered.text)
        .filter((event) => event.event === 'content_block_delta')
        .map((event) => ((event.data as Body).delta as Body).text)
        .join('');
      expect(text).toBe('It says hello.');
      expect((upstream.requests[1]?.body as { messages?: unknown[] } | undefined)?.messages?.[1]).toEqual(loop.messages[1]);

      await settled(testEnv);
      expect(await usageRows(testEnv, first)).toMatchObject([{ input_tokens: 40, output_tokens: 61, estimated: false }]);
      expect(await usageRows(testEnv, second)).toMatchObject([{ input_tokens: 90, output_tokens: 5, estimated: false }]);
      await expectBooksAgree(testEnv, upstream.requests, (request) =>
        request === upstream.requests[0]
          ? { prompt_tokens: 40, completion_tokens: 61, total_tokens: 101 }
          : { prompt_tokens: 90, completion_tokens: 5, total_tokens: 95 },
      );
    });

    it('takes Claude Code 2.1.332’s request with tool search and hidden thinking: the deferred tool stays out, the display goes on, the signed empty block comes back', async () => {
      const session = await fundedSession(testEnv);
      const upstream = fakeUpstream(() =>
        anthropicSse([
          { type: 'message_start', message: { id: 'msg_4', model: 'claude-haiku-4-5', usage: { input_tokens: 40, output_tokens: 1 } } },
          // Display omitted: the block's text is not streamed, its signature carries it.
          { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } },
          { type: 'content_block_stop', index: 0 },
          { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hello.' } },
          { type: 'content_block_stop', index: 1 },
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 30 } },
          { type: 'message_stop' },
        ]),
      );
      const requestId = newRequestId();
      const placeholder = { name: 'DeferredToolPlaceholder', input_schema: { type: 'object', properties: {} }, defer_loading: true };
      const answer = await post(
        gatewayWith({ upstreamFetch: upstream.fetch }),
        '/v1/messages?beta=true',
        {
          ...claudeCode,
          thinking: { type: 'enabled', budget_tokens: 31_999, display: 'omitted' },
          tools: [tool, placeholder],
          messages: [{ role: 'user', content: 'Say hello' }],
        },
        {
          ...anthropic(session.token, requestId),
          'anthropic-beta':
            'interleaved-thinking-2025-05-14,context-management-2025-06-27,claude-code-20250219,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20',
        },
      );
      expect(answer.status).toBe(200);
      const sent = upstream.requests[0]?.body as { tools: Array<{ name: string }>; thinking: unknown };
      expect(sent.tools.map((sentTool) => sentTool.name)).toEqual(['Read']);
      expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: 31_999, display: 'omitted' });
      const streamed = events(answer.text).filter(
        (event) => event.event === 'content_block_start' || event.event === 'content_block_delta',
      );
      expect(streamed.map((event) => (event.data as Body).content_block ?? (event.data as Body).delta)).toEqual([
        { type: 'thinking', thinking: '', signature: '' },
        { type: 'signature_delta', signature },
        { type: 'text', text: '' },
        { type: 'text_delta', text: 'Hello.' },
      ]);
      await expectBilledAsReported(requestId, upstream, { input: 40, output: 30 });
    });

    it('sends Claude Code’s cache breakpoints to Anthropic; its cache writes and reads are booked by class, the hold covering the writes', async () => {
      const session = await fundedSession(testEnv);
      const reported = { input_tokens: 12, cache_creation_input_tokens: 3000, cache_read_input_tokens: 9000, output_tokens: 20 };
      const upstream = fakeUpstream(() =>
        jsonResponse({
          id: 'msg_3',
          type: 'message',
          role: 'assistant',
          model: 'claude-haiku-4-5',
          content: [{ type: 'text', text: 'Cached.' }],
          stop_reason: 'end_turn',
          usage: reported,
        }),
      );
      const requestId = newRequestId();
      const cachedAsk = {
        model: 'anthropic:claude-haiku-4-5',
        max_tokens: 200,
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
      };
      const answer = await post(
        gatewayWith({ upstreamFetch: upstream.fetch }),
        '/v1/messages',
        cachedAsk,
        anthropic(session.token, requestId),
      );
      expect(answer.status).toBe(200);
      expect(answer.json()).toMatchObject({ usage: reported });
      expect(upstream.requests[0]?.body).toMatchObject({
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
      });
      await settled(testEnv);
      const [booked] = await sql<{ input_tokens: number; cached_tokens: number; cache_write_tokens: number }>(
        testEnv,
        'select input_tokens, cached_tokens, cache_write_tokens from usage_events where client_request_id = $1',
        [requestId],
      );
      expect(booked).toEqual({ input_tokens: 12_012, cached_tokens: 9000, cache_write_tokens: 3000 });
      await expectBooksAgree(testEnv, upstream.requests, () => ({ prompt_tokens: 12_012, completion_tokens: 20, total_tokens: 12_032 }));
    });

    it('to a provider other than Anthropic, the budget travels as an effort and the signed blocks stay home', async () => {
      const session = await fundedSession(testEnv);
      const upstream = streaming();
      const requestId = newRequestId();
      const loop = {
        ...claudeCode,
        model: 'openai:gpt-4o-mini',
        max_tokens: 2000,
        messages: [
          { role: 'user', content: 'Read a.txt' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'I should read it.', signature },
              { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello' }] },
        ],
      };
      const answer = await post(gatewayWith({ upstreamFetch: upstream.fetch }), '/v1/messages', loop, anthropic(session.token, requestId));
      expect(answer.status).toBe(200);
      const body = upstream.requests[0]?.body as Body & { messages: Body[] };
      expect(body.reasoning_effort).toBe('high');
      expect(body.thinking).toBeUndefined();
      expect(JSON.stringify(body.messages)).not.toContain(signature);
      await expectBilledAsReported(requestId, upstream, { input: 11, output: 7 });
    });
  });

  it('counts a prompt’s tokens for a live session, charging nothing; 401 without one', async () => {
    const session = await fundedSession(testEnv);
    const counted = await post(
      gatewayWith(),
      '/v1/messages/count_tokens',
      { model: ask.model, system: ask.system, messages: ask.messages },
      anthropic(session.token),
    );
    expect(counted.status).toBe(200);
    expect(counted.json().input_tokens).toBeGreaterThan(0);
    const refused = await post(
      gatewayWith(),
      '/v1/messages/count_tokens',
      { model: ask.model, messages: ask.messages },
      anthropic(`fvs_${'A'.repeat(43)}`),
    );
    expect(refused.status).toBe(401);
  });
});

describe('POST /v1/embeddings', () => {
  it('embeds a batch on the mock model in one call, billed per input token', async () => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith(),
      '/v1/embeddings',
      { model: 'mock:echo', input: ['one', 'two'], dimensions: 8 },
      {
        authorization: `Bearer ${session.token}`,
        'x-request-id': requestId,
      },
    );
    expect(answer.status).toBe(200);
    const body = answer.json() as { data: Array<{ index: number; embedding: number[] }>; usage: { prompt_tokens: number }; faucet: Body };
    expect(body.data.map((item) => [item.index, item.embedding.length])).toEqual([
      [0, 8],
      [1, 8],
    ]);
    expect(body.faucet).toMatchObject({ request_id: requestId, route_mode: 'platform' });
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toMatchObject([{ input_tokens: body.usage.prompt_tokens, output_tokens: 0 }]);
  });

  it('calls a priced provider once for the whole batch, booked with the tokens it reported', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() =>
      jsonResponse({
        object: 'list',
        data: [
          { object: 'embedding', index: 0, embedding: [0.5, -0.25] },
          { object: 'embedding', index: 1, embedding: [0.125, 1] },
        ],
        model: 'mistral-embed',
        usage: { prompt_tokens: 9, total_tokens: 9 },
      }),
    );
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/embeddings',
      { model: 'mistral:mistral-embed', input: ['a', 'b'] },
      {
        authorization: `Bearer ${session.token}`,
        'x-request-id': requestId,
      },
    );
    expect(answer.status).toBe(200);
    expect(answer.json()).toMatchObject({
      object: 'list',
      usage: { prompt_tokens: 9 },
      data: [{ embedding: [0.5, -0.25] }, { embedding: [0.125, 1] }],
    });
    expect(upstream.requests).toHaveLength(1);
    // Mistral takes no client request id: the audit matches its call by the call id the gateway answered.
    upstream.requests[0]!.headers['x-client-request-id'] = answer.headers.get('x-faucet-call-id') as string;
    await expectBilledAsReported(requestId, upstream, { input: 9, output: 0 });
  });

  it('serves OpenAI’s text-embedding-3-small asked for base64, the call id sent as its request id, billed with its tokens', async () => {
    const session = await fundedSession(testEnv);
    // OpenAI is asked for base64 whatever the client wants (a quarter of the bytes): [1, -2] as float32 LE.
    const vector = Buffer.from(new Float32Array([1, -2]).buffer).toString('base64');
    const upstream = fakeUpstream(() =>
      jsonResponse({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: vector }],
        model: 'text-embedding-3-small',
        usage: { prompt_tokens: 4, total_tokens: 4 },
      }),
    );
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/embeddings',
      { model: 'openai:text-embedding-3-small', input: 'hello there', encoding_format: 'float' },
      { authorization: `Bearer ${session.token}`, 'x-request-id': requestId },
    );
    expect(answer.status).toBe(200);
    expect(answer.json()).toMatchObject({ data: [{ index: 0, embedding: [1, -2] }], usage: { prompt_tokens: 4 } });
    expect(upstream.requests[0]?.headers['x-client-request-id']).toBe(answer.headers.get('x-faucet-call-id'));
    await expectBilledAsReported(requestId, upstream, { input: 4, output: 0 });
  });

  it.each<[string, Body]>([
    ['an empty input', { model: 'mock:echo', input: [] }],
    ['a chat model', { model: 'openai:gpt-4o-mini', input: 'x' }],
  ])('refuses %s with 400: nothing sent, held or booked', async (_case, body) => {
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const requestId = newRequestId();
    const answer = await post(gatewayWith({ upstreamFetch: upstream.fetch }), '/v1/embeddings', body, {
      authorization: `Bearer ${session.token}`,
      'x-request-id': requestId,
    });
    expect(answer.status).toBe(400);
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
  });
});
