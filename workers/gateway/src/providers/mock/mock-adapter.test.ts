import { describe, expect, it } from 'vitest';
import { z } from 'zod';
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

describe('mock:tools', () => {
  const weather = z
    .object({
      city: z.string(),
      days: z.number().int(),
      metric: z.boolean(),
      unit: z.enum(['celsius', 'fahrenheit']),
      note: z.string().nullable(),
      tags: z.array(z.string()).min(2),
      where: z.object({ country: z.string(), zoom: z.number() }).strict(),
      detail: z.number().optional(),
    })
    .strict();
  const tools = [
    {
      type: 'function' as const,
      function: { name: 'get_weather', parameters: z.toJSONSchema(weather) as Record<string, unknown>, strict: true },
    },
    {
      type: 'function' as const,
      function: { name: 'get_time', parameters: { type: 'object', properties: {}, additionalProperties: false } },
    },
  ];
  const asked = [
    { role: 'system' as const, content: 'Use the tools.' },
    { role: 'user' as const, content: 'What is the weather in Paris?' },
  ];

  it('calls the first tool once, with arguments its strict schema accepts, built from the last user message', async () => {
    const completion = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools } });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    expect(choice?.message.tool_calls).toHaveLength(1);
    const call = choice?.message.tool_calls?.[0];
    expect(call?.id).toMatch(/^call_mock_[0-9a-f]{32}$/);
    expect(call?.function.name).toBe('get_weather');
    const parsedArguments = JSON.parse(call?.function.arguments ?? '') as unknown;
    expect(weather.parse(parsedArguments)).toEqual({
      city: 'Paris',
      days: 1,
      metric: true,
      unit: 'celsius',
      note: 'Paris',
      tags: ['Paris', 'Paris'],
      where: { country: 'Paris', zoom: 1 },
    });
    const completionTokens = countTokens('get_weather') + countTokens(call?.function.arguments ?? '');
    expect(completion.usage).toEqual({
      prompt_tokens: countPromptTokens(asked, tools),
      completion_tokens: completionTokens,
      total_tokens: countPromptTokens(asked, tools) + completionTokens,
    });
  });

  it('calls the tool tool_choice names', async () => {
    const choice = { type: 'function' as const, function: { name: 'get_time' } };
    const completion = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools, tool_choice: choice } });
    expect(completion.choices[0]?.message.tool_calls?.[0]?.function).toEqual({ name: 'get_time', arguments: '{}' });
  });

  it('answers the same request with the same call and usage every time (only the ids differ)', async () => {
    const first = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools } });
    const second = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools } });
    expect(second.choices[0]?.message.tool_calls?.[0]?.function).toEqual(first.choices[0]?.message.tool_calls?.[0]?.function);
    expect(second.choices[0]?.message.tool_calls?.[0]?.id).not.toBe(first.choices[0]?.message.tool_calls?.[0]?.id);
    expect(second.usage).toEqual(first.usage);
  });

  it('answers with the tool result quoted once the last message is one', async () => {
    const answered = [
      ...asked,
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'call_1', content: ' 18 degrees and sunny ' },
    ];
    const completion = await mock.complete({ credential, request: { model: 'tools', messages: answered, tools } });
    const text = 'Tool result: 18 degrees and sunny';
    expect(completion.choices[0]?.message).toEqual({ role: 'assistant', content: text });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual({
      prompt_tokens: countPromptTokens(answered, tools),
      completion_tokens: countTokens(text),
      total_tokens: countPromptTokens(answered, tools) + countTokens(text),
    });
  });

  it('echoes when it has no tool to call: none given, or tool_choice none', async () => {
    for (const request of [
      { model: 'tools', messages: asked },
      { model: 'tools', messages: asked, tools, tool_choice: 'none' as const },
    ]) {
      const completion = await mock.complete({ credential, request });
      expect(completion.choices[0]?.message).toEqual({ role: 'assistant', content: 'Echo: What is the weather in Paris?' });
    }
  });

  it('stops a call at max_tokens with finish_reason length, its name counted first', async () => {
    const whole = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools } });
    const completion = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools, max_tokens: 6 } });
    const cut = completion.choices[0]?.message.tool_calls?.[0]?.function.arguments ?? '';
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(6);
    expect(cut.length).toBeGreaterThan(0);
    expect(whole.choices[0]?.message.tool_calls?.[0]?.function.arguments.startsWith(cut)).toBe(true);
    expect(cut).not.toBe(whole.choices[0]?.message.tool_calls?.[0]?.function.arguments);
  });

  it('streams the call: its id and name first, then the arguments one token per chunk, then the usage', async () => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of await mock.stream({ credential, request: { model: 'tools', messages: asked, tools, stream: true } }))
      chunks.push(chunk);
    const opening = chunks[0]?.choices[0]?.delta.tool_calls?.[0];
    expect(opening).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(opening?.id).toMatch(/^call_mock_/);
    const pieces = chunks.slice(1, -2).map((chunk) => chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '');
    const complete = await mock.complete({ credential, request: { model: 'tools', messages: asked, tools } });
    expect(pieces.join('')).toBe(complete.choices[0]?.message.tool_calls?.[0]?.function.arguments);
    expect(countTokens('get_weather') + pieces.length).toBe(complete.usage?.completion_tokens);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)?.usage).toEqual(complete.usage);
  });
});
