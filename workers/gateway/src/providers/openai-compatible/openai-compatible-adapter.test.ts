import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiCompletion, openAiSse, sseResponse } from '../../../../test/fake-upstream.ts';
import type { ChatCompletionChunk, ChatRequest } from '../../openai/chat-schemas.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { createOpenAiCompatibleAdapter } from './openai-compatible-adapter.ts';

const credential = { apiKey: 'sk-test-platform', baseUrl: 'https://api.openai.com/v1' };
const adapterWith = (fetch: FetchFunction) => createOpenAiCompatibleAdapter({ fetch, upstreamTimeoutMs: 5_000, mockLatencyMs: 0 });

async function collect(chunks: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const all: ChatCompletionChunk[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

describe('OpenAI-compatible adapter', () => {
  it('posts the request with the key and returns the completion with its usage', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('Hi there')));
    const completion = await adapterWith(upstream.fetch).complete({
      credential,
      request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], seed: 42, response_format: { type: 'text' } },
    });
    expect(completion.choices[0]?.message.content).toBe('Hi there');
    expect(completion.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
    expect(completion.system_fingerprint).toBe('fp_test');
    const [sent] = upstream.requests;
    expect(sent?.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-test-platform');
    // Allowed fields the gateway does not interpret go out untouched.
    expect(sent?.body).toMatchObject({ model: 'gpt-4o-mini', seed: 42, response_format: { type: 'text' }, stream: false });
  });

  it('builds the upstream body only from the allow-list, so a field that got past the schema never goes out', async () => {
    const upstream = fakeUpstream((request) =>
      (request.body as { stream: boolean }).stream ? sseResponse(openAiSse([])) : jsonResponse(openAiCompletion('Hi there')),
    );
    const smuggled = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi', cache_control: { type: 'ephemeral' } }],
      prediction: { type: 'content', content: 'guess' },
      seed: 1,
    } as unknown as ChatRequest;
    await adapterWith(upstream.fetch).complete({ credential, request: smuggled });
    await adapterWith(upstream.fetch).stream({ credential, request: smuggled });
    const sent = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], seed: 1 };
    expect(upstream.requests.map((request) => request.body)).toEqual([
      { ...sent, stream: false },
      { ...sent, stream: true, stream_options: { include_usage: true } },
    ]);
  });

  it('always asks a streaming upstream for usage and yields chunks until [DONE]', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse(
        openAiSse([
          openAiChunk({ role: 'assistant', content: '' }),
          openAiChunk({ content: 'Hel' }),
          openAiChunk({ content: 'lo' }),
          openAiChunk({}, 'stop'),
          openAiChunk({}, null, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }),
        ]),
      ),
    );
    const chunks = await collect(
      await adapterWith(upstream.fetch).stream({
        credential,
        request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true },
      }),
    );
    expect(upstream.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hello');
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2 });
  });

  it('turns an upstream 500 into upstream_error and a 400 into invalid_request', async () => {
    const failing = fakeUpstream(() => jsonResponse({ error: { message: 'boom' } }, 500));
    await expect(
      adapterWith(failing.fetch).complete({ credential, request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] } }),
    ).rejects.toMatchObject({
      code: 'upstream_error',
      status: 502,
    });
    const refusing = fakeUpstream(() =>
      jsonResponse({ error: { message: 'max_tokens is too large: 999999', type: 'invalid_request_error' } }, 400),
    );
    const refusal = await adapterWith(refusing.fetch)
      .complete({ credential, request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] } })
      .catch((error: unknown) => error);
    expect(FaucetError.isInstance(refusal) && refusal.code).toBe('invalid_request');
    expect((refusal as Error).message).toContain('max_tokens is too large');
  });

  it('never repeats a key the upstream quotes back in its error', async () => {
    const upstream = fakeUpstream(() =>
      jsonResponse({ error: { message: 'Incorrect API key provided: sk-proj-abcdefghijklmnop1234' } }, 401),
    );
    const failure = await adapterWith(upstream.fetch)
      .complete({ credential, request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] } })
      .catch((error: unknown) => error as FaucetError);
    expect(failure.code).toBe('upstream_error');
    expect(failure.message).not.toContain('sk-proj');
  });

  it('fails the stream with upstream_error when the upstream sends an error event', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse([...openAiSse([openAiChunk({ content: 'a' })], false), 'data: {"error":{"message":"overloaded"}}\n\n']),
    );
    const chunks = await adapterWith(upstream.fetch).stream({
      credential,
      request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
    });
    await expect(collect(chunks)).rejects.toMatchObject({ code: 'upstream_error' });
  });

  it('fails a stream cut off before [DONE] and before any choice finished', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse(openAiSse([openAiChunk({ role: 'assistant', content: '' }), openAiChunk({ content: 'Half a' })], false)),
    );
    const chunks = await adapterWith(upstream.fetch).stream({
      credential,
      request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
    });
    await expect(collect(chunks)).rejects.toMatchObject({ code: 'upstream_error', message: expect.stringContaining('before it finished') });
  });

  it('accepts a finished stream whose upstream sends no [DONE]', async () => {
    const upstream = fakeUpstream(() => sseResponse(openAiSse([openAiChunk({ content: 'Whole.' }), openAiChunk({}, 'stop')], false)));
    const chunks = await adapterWith(upstream.fetch).stream({
      credential,
      request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect((await collect(chunks)).length).toBe(2);
  });

  it('refuses a credential whose base URL is a private address, before any request', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('never')));
    await expect(
      adapterWith(upstream.fetch).complete({
        credential: { apiKey: 'k', baseUrl: 'http://10.1.2.3:8080/v1' },
        request: { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
      }),
    ).rejects.toMatchObject({ code: 'upstream_error' });
    expect(upstream.requests).toEqual([]);
  });
});
