import { describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, sseResponse } from '../../../../test/fake-upstream.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { formatSseEvent } from '#shared/wire/format-sse.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { anthropicApiVersion } from '#shared/providers/provider-catalog.ts';
import { createAnthropicAdapter } from './anthropic-adapter.ts';

const credential = { apiKey: 'sk-ant-test', baseUrl: 'https://api.anthropic.com/v1' };
const adapterWith = (fetch: FetchFunction) => createAnthropicAdapter({ fetch, upstreamTimeoutMs: 5_000, mockLatencyMs: 0 });

const anthropicMessage = {
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-haiku-4-5-20251001',
  content: [{ type: 'text', text: 'Paris.' }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 20, output_tokens: 3, cache_read_input_tokens: 5, cache_creation_input_tokens: 2 },
};

describe('Anthropic adapter', () => {
  it('translates the request: system apart, roles alternating, tools, tool results, stop and max_tokens', async () => {
    const upstream = fakeUpstream(() => jsonResponse(anthropicMessage));
    await adapterWith(upstream.fetch).complete({
      credential,
      request: {
        model: 'claude-haiku-4-5',
        max_tokens: 100,
        stop: 'END',
        temperature: 1.5,
        user: 'u-hash',
        tools: [
          {
            type: 'function',
            function: { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        ],
        tool_choice: 'required',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: 'Answer in English.' },
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'And now?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0' } },
            ],
          },
        ],
      },
    });
    const [sent] = upstream.requests;
    expect(sent?.url).toBe('https://api.anthropic.com/v1/messages');
    expect(sent?.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent?.headers['anthropic-version']).toBe(anthropicApiVersion);
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      system: 'Be brief.\n\nAnswer in English.',
      temperature: 1,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-hash' },
      tools: [{ name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny' },
            { type: 'text', text: 'And now?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0' } },
          ],
        },
      ],
    });
  });

  it("fills Anthropic's required max_tokens with the model's cap when the client sets none", async () => {
    const upstream = fakeUpstream(() => jsonResponse(anthropicMessage));
    await adapterWith(upstream.fetch).complete({
      credential,
      request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(upstream.requests[0]?.body).toMatchObject({ max_tokens: 64_000 });
  });

  it('translates the answer back, counting cache reads and writes as prompt tokens', async () => {
    const upstream = fakeUpstream(() =>
      jsonResponse({
        ...anthropicMessage,
        content: [...anthropicMessage.content, { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }],
        stop_reason: 'tool_use',
      }),
    );
    const completion = await adapterWith(upstream.fetch).complete({
      credential,
      request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(completion).toMatchObject({
      id: 'msg_01',
      object: 'chat.completion',
      model: 'claude-haiku-4-5-20251001',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Paris.',
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 27, completion_tokens: 3, total_tokens: 30, prompt_tokens_details: { cached_tokens: 5 } },
    });
  });

  it('translates the event stream into OpenAI chunks ending with the usage', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse([
        formatSseEvent('message_start', {
          type: 'message_start',
          message: { ...anthropicMessage, content: [], stop_reason: null, usage: { input_tokens: 20, output_tokens: 1 } },
        }),
        formatSseEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        formatSseEvent('ping', { type: 'ping' }),
        formatSseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Par' } }),
        formatSseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'is.' } }),
        formatSseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
        formatSseEvent('content_block_start', {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
        }),
        formatSseEvent('content_block_delta', {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '{"city":' },
        }),
        formatSseEvent('content_block_delta', {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '"Paris"}' },
        }),
        formatSseEvent('content_block_stop', { type: 'content_block_stop', index: 1 }),
        formatSseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }),
        formatSseEvent('message_stop', { type: 'message_stop' }),
      ]),
    );
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of await adapterWith(upstream.fetch).stream({
      credential,
      request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] },
    })) {
      chunks.push(chunk);
    }
    expect(upstream.requests[0]?.body).toMatchObject({ stream: true });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? null)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Par' },
      { content: 'is.' },
      { tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
      {},
      null,
    ]);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)).toMatchObject({
      id: 'msg_01',
      choices: [],
      usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
    });
  });

  it('fails with upstream_error on an error event or a stream cut before message_stop', async () => {
    const start = formatSseEvent('message_start', { type: 'message_start', message: { ...anthropicMessage, content: [] } });
    const overloaded = fakeUpstream(() =>
      sseResponse([start, formatSseEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })]),
    );
    const cut = fakeUpstream(() => sseResponse([start]));
    for (const upstream of [overloaded, cut]) {
      const chunks = await adapterWith(upstream.fetch).stream({
        credential,
        request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] },
      });
      await expect(
        (async () => {
          for await (const _chunk of chunks);
        })(),
      ).rejects.toMatchObject({ code: 'upstream_error' });
    }
  });

  it('maps an Anthropic 529 overload to upstream_error', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 529));
    await expect(
      adapterWith(upstream.fetch).complete({
        credential,
        request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] },
      }),
    ).rejects.toMatchObject({ code: 'upstream_error', status: 502 });
  });
});
