/**
 * Anthropic's thinking through the chat pipeline, both ways: a Messages request's `thinking` and its
 * earlier turns' thinking blocks (with the signatures Anthropic checks) reach an Anthropic model as
 * the client wrote them; a streamed or whole answer's thinking reaches the Messages client as
 * Anthropic wrote it. Other protocols get an effort instead, and no blocks they cannot check.
 */
import { describe, expect, it, vi } from 'vitest';
import { SseDecoder } from '#shared/wire/sse.ts';
import { formatSseEvent } from '#shared/wire/format-sse.ts';
import type { ChatCompletionChunk, ChatRequest } from '../../openai/chat-schemas.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import { meteredStream } from '../../streaming/metered-stream.ts';
import { chatRequestOfMessages } from '../../surfaces/messages/chat-request-of-messages.ts';
import { messagesRequestSchema } from '../../surfaces/messages/messages-request.ts';
import { messageOfChatCompletion } from '../../surfaces/messages/messages-response.ts';
import { messagesEventStream } from '../../surfaces/messages/messages-stream.ts';
import { requestForProtocol } from '../accepted-fields.ts';
import { chunksFromAnthropicSse } from './chunks-from-anthropic-sse.ts';
import { fromAnthropicResponse } from './from-anthropic-response.ts';
import { toAnthropicRequest } from './to-anthropic-request.ts';
import { faucetFixture } from '../../../../test/faucet-fixture.ts';

const signature = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds';
const tool = { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };

/** Claude Code's second request of a tool loop: its thinking, the tool call, the tool's result. */
const toolLoop = messagesRequestSchema.parse({
  model: 'anthropic:claude-sonnet-4-5',
  max_tokens: 32_000,
  thinking: { type: 'enabled', budget_tokens: 31_999 },
  tools: [tool],
  messages: [
    { role: 'user', content: 'Read a.txt' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should read the file.', signature },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello' }] },
  ],
});

function chatOf(body = toolLoop): ChatRequest {
  const { feature: _feature, route_mode: _route, model: _model, ...request } = chatRequestOfMessages(body);
  return { ...request, model: 'claude-sonnet-4-5' };
}

describe('a Messages request with thinking, to an Anthropic model', () => {
  it('sends the thinking setting and the earlier turn’s blocks exactly, thinking first in the assistant turn', () => {
    const sent = toAnthropicRequest(requestForProtocol('anthropic', chatOf()), 1024);
    expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: 31_999 });
    expect(sent.max_tokens).toBe(32_000);
    expect(sent.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should read the file.', signature },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
      ],
    });
    expect(sent.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello' }] });
  });

  it('keeps the budget below max_tokens when the feature’s cap lowered them; refuses thinking that cannot fit', () => {
    const capped = { ...chatOf(), max_completion_tokens: 4000 };
    expect(toAnthropicRequest(capped, 1024).thinking).toEqual({ type: 'enabled', budget_tokens: 3999 });
    expect(() => toAnthropicRequest({ ...chatOf(), max_completion_tokens: 1000 }, 1024)).toThrow(/max_tokens above 1024/);
  });

  it('sends the thinking display as asked: omitted, the blocks come back empty but signed (Claude Code 2.1.332)', () => {
    const omitted = chatOf(
      messagesRequestSchema.parse({ ...toolLoop, thinking: { type: 'enabled', budget_tokens: 31_999, display: 'omitted' } }),
    );
    expect(toAnthropicRequest(omitted, 1024).thinking).toEqual({ type: 'enabled', budget_tokens: 31_999, display: 'omitted' });
    expect(toAnthropicRequest({ ...omitted, max_completion_tokens: 4000 }, 1024).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 3999,
      display: 'omitted',
    });
    const elsewhere = requestForProtocol('openai_compatible', omitted);
    expect(elsewhere.reasoning_effort).toBe('high');
    expect(elsewhere).not.toHaveProperty('thinking');
  });

  it('turns a reasoning_effort (chat, Responses) into a budget, and `none` into no thinking', () => {
    const ask = (effort: ChatRequest['reasoning_effort']): ChatRequest => ({
      model: 'claude-sonnet-4-5',
      max_completion_tokens: 20_000,
      reasoning_effort: effort,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(toAnthropicRequest(ask('low'), 1024).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(toAnthropicRequest(ask('high'), 1024).thinking).toEqual({ type: 'enabled', budget_tokens: 16_384 });
    expect(toAnthropicRequest(ask('xhigh'), 1024).thinking).toEqual({ type: 'enabled', budget_tokens: 19_999 });
    expect(toAnthropicRequest(ask('none'), 1024).thinking).toBeUndefined();
  });
});

describe('the same request to another protocol', () => {
  it('gets the budget as an effort and none of the blocks, whose signatures only Anthropic can check', () => {
    const sent = requestForProtocol('openai_compatible', chatOf());
    expect(sent.thinking).toBeUndefined();
    expect(sent.reasoning_effort).toBe('high');
    expect(sent.messages.some((message) => message.thinking_blocks !== undefined)).toBe(false);
    // The turn's tool call and the result still reach the model.
    expect(sent.messages[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'toolu_1' }] });
  });

  it('keeps an effort the client gave, and leaves a request without thinking as it is', () => {
    expect(requestForProtocol('gemini', { ...chatOf(), reasoning_effort: 'low' }).reasoning_effort).toBe('low');
    const plain: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    expect(requestForProtocol('openai_compatible', plain)).toBe(plain);
  });
});

const anthropicTurn = [
  { type: 'message_start', message: { id: 'msg_1', model: 'claude-sonnet-4-5', usage: { input_tokens: 40, output_tokens: 1 } } },
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'I should ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'read the file.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"path":"a.txt"}' } },
  { type: 'content_block_stop', index: 2 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 61 } },
  { type: 'message_stop' },
];

const faucet = faucetFixture({ provider: 'anthropic', model: 'claude-sonnet-4-5', input_tokens: 40, output_tokens: 61 });

function upstreamBody(events: unknown[]): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const text = events.map((event) => decoder.decode(formatSseEvent((event as { type: string }).type, event))).join('');
  return new Response(text).body!;
}

/** The gateway's metered stream over `chunks`, settling with `settle`. */
function metered(chunks: AsyncIterable<ChatCompletionChunk>, settle: () => Promise<FaucetObject>): ReadableStream<Uint8Array> {
  return meteredStream({
    chunks,
    includeUsage: true,
    bounds: { inputTokens: 5000, outputTokens: 32_000 },
    requestId: 'req_1',
    deadlineMs: 60_000,
    drainMs: 50,
    settle,
    abandon: async () => undefined,
    stopUpstream: () => undefined,
    defer: () => undefined,
    onSettleFailure: () => undefined,
  });
}

describe('an Anthropic model’s streamed thinking, to a Messages client', () => {
  it('arrives as Anthropic sent it: the thinking text, its signature, the redacted block, the tool call; booked with its usage', async () => {
    const settle = vi.fn(async () => faucet);
    const stream = metered(chunksFromAnthropicSse(upstreamBody(anthropicTurn), 1), settle);
    const text = await new Response(messagesEventStream(stream, { callId: 'call_1', requestId: 'req_1' })).text();
    const events = new SseDecoder().push(text).map(({ event }) => JSON.parse(event.data) as Record<string, any>);
    const blocks = events.filter((event) => event.type === 'content_block_start').map((event) => event.content_block);
    expect(blocks).toEqual([
      { type: 'thinking', thinking: '', signature: '' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
      { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} },
    ]);
    const deltas = events.filter((event) => event.type === 'content_block_delta').map((event) => [event.index, event.delta]);
    expect(deltas).toEqual([
      [0, { type: 'thinking_delta', thinking: 'I should ' }],
      [0, { type: 'thinking_delta', thinking: 'read the file.' }],
      [0, { type: 'signature_delta', signature }],
      [2, { type: 'input_json_delta', partial_json: '{"path":"a.txt"}' }],
    ]);
    const stops = events.filter((event) => event.type === 'content_block_stop').map((event) => event.index);
    expect(stops).toEqual([0, 1, 2]);
    expect(events.find((event) => event.type === 'message_delta')).toMatchObject({
      delta: { stop_reason: 'tool_use' },
      usage: { input_tokens: 40, output_tokens: 61 },
    });
    expect(settle).toHaveBeenCalledWith(
      expect.objectContaining({ estimated: false, tokens: expect.objectContaining({ output: 61 }) }),
      'completed',
      undefined,
    );
  });

  it('counts thinking as output when the provider reports no usage: the bound is the bytes it streamed, not zero', async () => {
    const settle = vi.fn(async () => faucet);
    const withoutUsage = anthropicTurn
      .slice(0, 6)
      .concat([{ type: 'message_delta', delta: { stop_reason: 'end_turn' } }, { type: 'message_stop' }] as never[])
      .map((event) => (event.type === 'message_start' ? { ...event, message: { id: 'msg_1', model: 'claude-sonnet-4-5' } } : event));
    const chunks = (async function* () {
      for await (const chunk of chunksFromAnthropicSse(upstreamBody(withoutUsage), 1)) if (chunk.usage == null) yield chunk;
    })();
    await new Response(metered(chunks, settle)).text();
    const [usage] = settle.mock.calls[0] as unknown as [{ estimated: boolean; tokens: { output: number } }];
    expect(usage.estimated).toBe(true);
    // 'I should read the file.' (23 bytes) plus the signature's block.
    expect(usage.tokens.output).toBeGreaterThanOrEqual(23 + signature.length);
  });
});

describe('an Anthropic model’s whole answer with thinking, to a Messages client', () => {
  it('keeps each block and its signature, in order', () => {
    const completion = fromAnthropicResponse(
      {
        id: 'msg_1',
        model: 'claude-sonnet-4-5',
        content: [
          { type: 'thinking', thinking: 'Plan.', signature },
          { type: 'redacted_thinking', data: 'EmwK' },
          { type: 'text', text: 'Done.' },
        ],
        stop_reason: 'end_turn',
        usage: { input_tokens: 10, output_tokens: 20 },
      },
      1,
    );
    expect(completion.choices[0]?.message).toMatchObject({ reasoning_content: 'Plan.', content: 'Done.' });
    expect(messageOfChatCompletion(completion, { callId: 'call_1' }).content).toEqual([
      { type: 'thinking', thinking: 'Plan.', signature },
      { type: 'redacted_thinking', data: 'EmwK' },
      { type: 'text', text: 'Done.' },
    ]);
  });
});
