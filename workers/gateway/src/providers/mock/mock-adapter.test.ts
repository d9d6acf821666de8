import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { countPromptTokens } from '../../tokens/count-prompt-tokens.ts';
import { countTokens } from '../../tokens/tokenize.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { createMockAdapter } from './mock-adapter.ts';

const noNetwork: FetchFunction = () => Promise.reject(new Error('the mock provider must not use the network'));
const mock = createMockAdapter({ fetch: noNetwork, upstreamTimeoutMs: 1_000, mockLatencyMs: 0 });
const credential = { apiKey: null, baseUrl: 'mock://local' };
const messages = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'first question' },
  { role: 'assistant' as const, content: 'first answer' },
  { role: 'user' as const, content: 'What is the capital of France?' },
];

describe('mock provider', () => {
  it('echoes the last user message with exact token counts', async () => {
    const completion = await mock.complete({ credential, request: { model: 'echo', messages } });
    const text = 'Echo: What is the capital of France?';
    expect(completion.choices[0]?.message.content).toBe(text);
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual({
      prompt_tokens: countPromptTokens(messages),
      completion_tokens: countTokens(text),
      total_tokens: countPromptTokens(messages) + countTokens(text),
    });
  });

  it('answers the same request identically every time', async () => {
    const first = await mock.complete({ credential, request: { model: 'echo', messages } });
    const second = await mock.complete({ credential, request: { model: 'echo', messages } });
    expect(second.choices).toEqual(first.choices);
    expect(second.usage).toEqual(first.usage);
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const completion = await mock.complete({ credential, request: { model: 'echo', messages, max_tokens: 3 } });
    expect(completion.usage?.completion_tokens).toBe(3);
    expect(completion.choices[0]?.finish_reason).toBe('length');
  });

  it('streams one chunk per token and ends with the usage', async () => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of await mock.stream({ credential, request: { model: 'echo', messages, stream: true } })) chunks.push(chunk);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    const complete = await mock.complete({ credential, request: { model: 'echo', messages } });
    expect(text).toBe(complete.choices[0]?.message.content);
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.content).length).toBe(complete.usage?.completion_tokens);
    expect(chunks.at(-1)?.usage).toEqual(complete.usage);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('waits the configured latency before answering, and stops waiting when aborted', async () => {
    const slow = createMockAdapter({ fetch: noNetwork, upstreamTimeoutMs: 1_000, mockLatencyMs: 60_000 });
    const abort = new AbortController();
    let settled = false;
    const pending = slow.complete({ credential, request: { model: 'echo', messages }, signal: abort.signal }).finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    abort.abort();
    await expect(pending).rejects.toMatchObject({ code: 'upstream_error' });
  });

  it('refuses models it does not have', async () => {
    await expect(mock.complete({ credential, request: { model: 'gpt-9', messages } })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
