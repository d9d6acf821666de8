import { describe, expect, it, vi } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { SseDecoder } from '#shared/wire/sse.ts';
import type { ChatCompletionChunk, ChatUsage } from '../../openai/chat-schemas.ts';
import { chunksFromAnthropicSse } from '../../providers/anthropic/chunks-from-anthropic-sse.ts';
import { meteredStream } from '../../streaming/metered-stream.ts';
import { MessagesStreamTranslator, messagesEventStream } from './messages-stream.ts';
import { faucetFixture } from '../../../../test/faucet-fixture.ts';

const faucet = faucetFixture({ provider: 'anthropic', model: 'claude-sonnet-4-5', input_tokens: 1300, output_tokens: 9 });
const usage: ChatUsage = {
  prompt_tokens: 1300,
  completion_tokens: 9,
  total_tokens: 1309,
  prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 200 },
};

type Delta = ChatCompletionChunk['choices'][number]['delta'] & Record<string, unknown>;
function chunk(delta: Delta, finishReason: string | null = null): ChatCompletionChunk {
  return {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'claude-sonnet-4-5',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}
const usageChunk: ChatCompletionChunk = {
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'claude-sonnet-4-5',
  choices: [],
  usage,
};

function translate(chunks: ChatCompletionChunk[]) {
  const translator = new MessagesStreamTranslator({ callId: 'call_1' });
  const events = chunks.flatMap((each) => translator.chunk(each));
  translator.faucet(faucet);
  return [...events, ...translator.done()];
}

const wholeUsage = { input_tokens: 100, output_tokens: 9, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 };

describe('chat chunks become Anthropic stream events, in Anthropic’s order', () => {
  it('text: message_start, ping, one text block, message_delta with the whole usage and the faucet object, message_stop', () => {
    const events = translate([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({}, 'stop'),
      usageChunk,
    ]);
    expect(events).toEqual([
      {
        type: 'message_start',
        message: {
          id: 'msg_call_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: 'ping' },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: wholeUsage, faucet },
      { type: 'message_stop' },
    ]);
  });

  it('tool use: a text block, then one tool_use block per call with its arguments as input_json_delta', () => {
    const events = translate([
      chunk({ role: 'assistant', content: 'Reading.' }),
      chunk({ tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"file_path":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'toolu_2', type: 'function', function: { name: 'List', arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk,
    ]);
    expect(events.map((event) => event.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.slice(5, 12)).toEqual([
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"file_path":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"a.txt"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_2', name: 'List', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 2 },
    ]);
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'tool_use' } });
  });

  it('thinking: an upstream’s reasoning text streams as a thinking block before the text block', () => {
    const events = translate([
      chunk({ role: 'assistant', reasoning_content: 'six ' }),
      chunk({ reasoning_content: 'times seven' }),
      chunk({ content: '42' }),
      chunk({}, 'stop'),
      usageChunk,
    ]);
    expect(events.slice(2, 8)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'six ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'times seven' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '42' } },
    ]);
  });

  it('a cut answer ends with stop_reason max_tokens', () => {
    const events = translate([chunk({ content: 'Once upon' }), chunk({}, 'length'), usageChunk]);
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'max_tokens' } });
  });

  it('without the provider’s usage, message_delta reports the counts the call was booked at', () => {
    const events = translate([chunk({ content: 'x' }), chunk({}, 'stop')]);
    expect(events.at(-2)).toMatchObject({
      usage: { input_tokens: 1300, output_tokens: 9, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    });
  });
});

interface Played {
  settle: ReturnType<typeof vi.fn>;
  abandon: ReturnType<typeof vi.fn>;
  stream: ReadableStream<Uint8Array>;
}

/** The gateway's own metered stream over the given chunks (or a failure after them), then this surface after it. */
function played(
  chunks: ChatCompletionChunk[],
  failure?: FaucetError,
  hold?: Promise<void>,
  options: { promptTokens?: number; pingIntervalMs?: number } = {},
): Played {
  const settle = vi.fn(async () => faucet);
  const abandon = vi.fn(async () => undefined);
  async function* upstream() {
    for (const each of chunks) yield each;
    if (hold !== undefined) await hold;
    if (failure !== undefined) throw failure;
  }
  const metered = meteredStream({
    chunks: upstream(),
    includeUsage: true,
    bounds: { inputTokens: 5000, outputTokens: 500 },
    requestId: 'req_1',
    deadlineMs: 60_000,
    drainMs: 50,
    settle,
    abandon,
    stopUpstream: () => undefined,
    defer: () => undefined,
    onSettleFailure: () => undefined,
  });
  return { settle, abandon, stream: messagesEventStream(metered, { callId: 'call_1', requestId: 'req_1', ...options }) };
}

async function read(stream: ReadableStream<Uint8Array>): Promise<{ text: string; events: Array<{ event?: string; data: any }> }> {
  const text = await new Response(stream).text();
  const events = new SseDecoder().push(text).map(({ event }) => ({ event: event.event, data: JSON.parse(event.data) }));
  return { text, events };
}

const toolTurn = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Reading.' }),
  chunk({ tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'path":"a.txt"}' } }] }),
  chunk({}, 'tool_calls'),
  usageChunk,
];

describe('after the metered stream', () => {
  it('writes each event as `event: <type>` with its JSON, ending at message_stop once the call is settled', async () => {
    const { stream, settle } = played(toolTurn);
    const { text, events } = await read(stream);
    expect(settle).toHaveBeenCalledOnce();
    expect(text.startsWith('event: message_start\ndata: {"type":"message_start"')).toBe(true);
    expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    expect(text).not.toContain('[DONE]');
    for (const event of events) expect(event.event).toBe(event.data.type);
    expect(events.at(-2)?.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: wholeUsage,
      faucet,
    });
  });

  it('reads back through the anthropic adapter’s own stream parser as the chunks it came from', async () => {
    const { stream } = played(toolTurn);
    const back: ChatCompletionChunk[] = [];
    for await (const each of chunksFromAnthropicSse(stream, 1)) back.push(each);
    const text = back.map((each) => each.choices[0]?.delta.content ?? '').join('');
    const toolCalls = back.flatMap((each) => each.choices[0]?.delta.tool_calls ?? []);
    expect(text).toBe('Reading.');
    expect(toolCalls[0]).toMatchObject({ index: 0, id: 'toolu_1', function: { name: 'Read' } });
    expect(toolCalls.map((call) => call.function?.arguments ?? '').join('')).toBe('{"file_path":"a.txt"}');
    expect(back.find((each) => each.choices[0]?.finish_reason != null)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(back.at(-1)?.usage).toEqual(usage);
  });

  it('a failure mid-stream ends with an error event in Anthropic’s shape, after what was delivered and never with message_stop', async () => {
    const { stream, settle } = played(toolTurn.slice(0, 2), new FaucetError('upstream_error', 'Anthropic reported an error mid-stream.'));
    const { events } = await read(stream);
    expect(settle).toHaveBeenCalledOnce();
    expect(events.map((event) => event.event)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'error']);
    expect(events.at(-1)?.data).toEqual({
      type: 'error',
      error: { type: 'api_error', code: 'upstream_error', message: 'Anthropic reported an error mid-stream.', request_id: 'req_1' },
      request_id: 'req_1',
      faucet,
    });
  });

  it('a failure before anything was delivered is released and ends with the error event alone', async () => {
    const { stream, settle, abandon } = played([], new FaucetError('upstream_timeout', 'The upstream took too long.'));
    const { events } = await read(stream);
    expect(settle).not.toHaveBeenCalled();
    expect(abandon).toHaveBeenCalledOnce();
    expect(events).toEqual([
      {
        event: 'error',
        data: {
          type: 'error',
          error: { type: 'timeout_error', code: 'upstream_timeout', message: 'The upstream took too long.', request_id: 'req_1' },
          request_id: 'req_1',
        },
      },
    ]);
  });

  it('reports the gateway’s own prompt count in message_start until message_delta gives the provider’s', async () => {
    const { events } = await read(played(toolTurn, undefined, undefined, { promptTokens: 1234 }).stream);
    expect(events[0]?.data.message.usage).toEqual({
      input_tokens: 1234,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(events.at(-2)?.data.usage).toEqual(wholeUsage);
  });

  it('sends a ping while the upstream is silent, and none before message_start or after message_stop', async () => {
    let release = () => {};
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reader = played(toolTurn.slice(0, 2), undefined, hold, { pingIntervalMs: 5 }).stream.getReader();
    const decoder = new TextDecoder();
    let text = '';
    // Two pings beyond the one after message_start: both sent by the timer while the upstream holds.
    while ((text.match(/event: ping/g) ?? []).length < 3) text += decoder.decode((await reader.read()).value);
    release();
    for (let step = await reader.read(); !step.done; step = await reader.read()) text += decoder.decode(step.value);
    const types = new SseDecoder().push(text).map(({ event }) => event.event);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.slice(types.indexOf('content_block_delta'), types.indexOf('content_block_stop'))).toContain('ping');
  });

  it('a client that goes away still gets its call booked: the cancel reaches the metered stream', async () => {
    let release = () => {};
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { stream, settle } = played(toolTurn.slice(0, 2), undefined, hold);
    const reader = stream.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('event: message_start');
    await reader.cancel();
    release();
    await vi.waitFor(() => expect(settle).toHaveBeenCalledOnce());
  });
});
