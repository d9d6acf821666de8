import { beforeAll, describe, expect, it } from 'vitest';
import { formatUsd } from '#shared/money/index.ts';
import { rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiSse, openSseResponse, sseResponse } from '../../../test/fake-upstream.ts';
import { formatSseEvent } from '#shared/wire/format-sse.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  openStream,
  settled,
  sseData,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { countPromptTokens } from '../tokens/count-prompt-tokens.ts';
import { countTokens } from '../tokens/tokenize.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test',
    UPSTREAM_DRAIN_MS: '200',
  });
});

interface FaucetEvent {
  object: string;
  choices: unknown[];
  faucet: { request_id: string; input_tokens: number; output_tokens: number; estimated: boolean; charge: { amount_usd: string } };
}

describe('streaming', () => {
  it('streams mock:echo chunks, then the faucet object as the last event before [DONE]', async () => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const messages = [userMessage('stream me please')];
    const response = await chat(
      gatewayWith(),
      testEnv,
      session.token,
      { model: 'mock:echo', feature: 'chat', messages, stream: true },
      requestId,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-request-id')).toBe(requestId);

    const events = sseData(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events
      .slice(0, -2)
      .map((data) => JSON.parse(data) as { object: string; choices: Array<{ delta: { content?: string } }>; usage?: unknown });
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Echo: stream me please');
    // The client did not ask for usage, so the upstream's usage chunk is not forwarded.
    expect(chunks.some((chunk) => chunk.usage != null)).toBe(false);

    const last = JSON.parse(events.at(-2)!) as FaucetEvent;
    const outputTokens = countTokens('Echo: stream me please');
    const rated = rateUsage(
      { routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens: countPromptTokens(messages), outputTokens, estimated: false },
      {},
      ratingSettingsFor(testEnv, 5000),
    );
    expect(last.object).toBe('faucet.usage');
    expect(last.choices).toEqual([]);
    expect(last.faucet).toMatchObject({
      request_id: requestId,
      output_tokens: outputTokens,
      estimated: false,
      charge: { amount_usd: formatUsd(rated.retailUsd) },
    });
    await settled(testEnv);
    expect((await usageRows(testEnv, requestId))[0]?.retail_usd).toBe(formatUsd(rated.retailUsd));
    // Its worst case no longer held.
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
  });

  it('asks the upstream for usage, forwards it when the client asked too, and settles on the reported counts', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse(
        openAiSse([
          openAiChunk({ role: 'assistant', content: '' }),
          openAiChunk({ content: 'Bonjour' }),
          openAiChunk({}, 'stop'),
          openAiChunk({}, null, { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 }),
        ]),
      ),
    );
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      messages: [userMessage('Say hello in French')],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(upstream.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const events = sseData(await response.text());
    const usageChunk = JSON.parse(events.at(-3)!) as { choices: unknown[]; usage: { completion_tokens: number } };
    expect(usageChunk).toMatchObject({ choices: [], usage: { completion_tokens: 3 } });
    const last = JSON.parse(events.at(-2)!) as FaucetEvent;
    expect(last.faucet).toMatchObject({ input_tokens: 12, output_tokens: 3, estimated: false });
  });

  it('streams an Anthropic model as OpenAI chunks and settles on the usage Anthropic reported', async () => {
    const message = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 30, output_tokens: 1 },
    };
    const upstream = fakeUpstream(() =>
      sseResponse([
        formatSseEvent('message_start', { type: 'message_start', message }),
        formatSseEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        formatSseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Salut' } }),
        formatSseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
        formatSseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } }),
        formatSseEvent('message_stop', { type: 'message_stop' }),
      ]),
    );
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'anthropic:claude-haiku-4-5',
      feature: 'chat',
      max_tokens: 20,
      messages: [userMessage('Say hi in French')],
      stream: true,
    });
    const events = sseData(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events
      .slice(0, -2)
      .map((data) => JSON.parse(data) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Salut');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({
      object: 'faucet.usage',
      faucet: { provider: 'anthropic', input_tokens: 30, output_tokens: 4, estimated: false },
    });
  });

  it('bills a client abort mid-stream at upper bounds when the upstream gives no count within the drain, and stops the upstream', async () => {
    let upstreamCancelled: Promise<void> | undefined;
    const upstream = fakeUpstream((_request, signal) => {
      const open = openSseResponse(
        openAiSse(
          [openAiChunk({ role: 'assistant', content: '' }), openAiChunk({ content: 'The first' }), openAiChunk({ content: ' few words' })],
          false,
        ),
        signal,
      );
      upstreamCancelled = open.cancelled;
      return open.response;
    });
    const session = await fundedSession(testEnv, '1.00000000');
    const messages = [userMessage('Tell me a very long story')];
    const { response, requestId, finished } = await openStream(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      messages,
      max_tokens: 300,
    });
    expect(response.status).toBe(200);

    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('few words')) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended early');
      received += decoder.decode(value, { stream: true });
    }
    await reader.cancel();
    await finished();
    await upstreamCancelled;

    // Faucet cut an upstream still generating: the provider may have produced more than was seen, so
    // the output is billed at the request's bound; the input at the prompt's byte bound.
    await settled(testEnv);
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ output_tokens: 300, estimated: true });
    expect(row!.input_tokens).toBeGreaterThanOrEqual(new TextEncoder().encode('Tell me a very long story').byteLength);
    const rated = rateUsage(
      {
        routeMode: 'platform',
        provider: 'openai',
        model: 'gpt-4o-mini',
        inputTokens: row!.input_tokens,
        outputTokens: 300,
        estimated: true,
      },
      {},
      ratingSettingsFor(testEnv, 5000),
    );
    expect(row!.retail_usd).toBe(formatUsd(rated.retailUsd));
    expect(countTokens('The first few words')).toBeLessThan(300);
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
  });

  it('answers an upstream refusal before the first byte with the error envelope, releasing the hold', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ error: { message: 'down' } }, 503));
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('hi')], stream: true },
      requestId,
    );
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    expect((await wallet(testEnv, session.walletId)).balance).toBe('1.00000000');
  });

  it('ends a stream that breaks mid-way with the charge for what was delivered and an error event', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse([...openAiSse([openAiChunk({ content: 'Half an' })], false), 'data: {"error":{"message":"overloaded"}}\n\n']),
    );
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('hi')], stream: true },
      requestId,
    );
    const events = sseData(await response.text());
    expect(events).not.toContain('[DONE]');
    // Output without the provider's count: the UTF-8 bytes delivered, an upper bound of their tokens.
    expect(JSON.parse(events.at(-2)!)).toMatchObject({
      object: 'faucet.usage',
      faucet: { output_tokens: 'Half an'.length, estimated: true },
    });
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ error: { code: 'upstream_error', request_id: requestId } });
    await settled(testEnv);
    expect((await usageRows(testEnv, requestId))[0]?.output_tokens).toBe('Half an'.length);
  });
});
