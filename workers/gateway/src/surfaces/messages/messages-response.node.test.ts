import { describe, expect, it } from 'vitest';
import type { ChatCompletion } from '../../openai/chat-schemas.ts';
import { fromAnthropicResponse, reportedUsage } from '../../providers/anthropic/from-anthropic-response.ts';
import { messageOfChatCompletion, messagesUsageOf, stopReasonOf } from './messages-response.ts';
import { faucetFixture } from '../../../../test/faucet-fixture.ts';

const faucet = faucetFixture({ feature: 'chat', provider: 'anthropic', model: 'claude-sonnet-4-5', input_tokens: 12, output_tokens: 5 });

function completion(message: Record<string, unknown>, finishReason: string | null, usage?: ChatCompletion['usage']): ChatCompletion {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'claude-sonnet-4-5',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finishReason }],
    usage: usage === undefined ? { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } : usage,
  };
}

describe('usage: Anthropic input_tokens excludes the cache reads and writes that OpenAI prompt_tokens includes', () => {
  it('takes cache reads and writes out of the prompt tokens', () => {
    expect(
      messagesUsageOf({
        prompt_tokens: 1000,
        completion_tokens: 50,
        prompt_tokens_details: { cached_tokens: 600, cache_write_tokens: 300 },
      }),
    ).toEqual({ input_tokens: 100, output_tokens: 50, cache_read_input_tokens: 600, cache_creation_input_tokens: 300 });
  });

  it('reads OpenAI cached tokens, which have no writes, as cache reads', () => {
    expect(messagesUsageOf({ prompt_tokens: 2048, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 1024 } })).toEqual({
      input_tokens: 1024,
      output_tokens: 1,
      cache_read_input_tokens: 1024,
      cache_creation_input_tokens: 0,
    });
  });

  it('clamps parts larger than the prompt as metering does, so the three add up to the prompt billed', () => {
    const usage = messagesUsageOf({
      prompt_tokens: 1000,
      completion_tokens: 0,
      prompt_tokens_details: { cached_tokens: 900, cache_write_tokens: 300 },
    });
    expect(usage).toEqual({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 900, cache_creation_input_tokens: 100 });
    expect(usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens).toBe(1000);
  });

  it.each([
    { input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 3000, cache_read_input_tokens: 0 },
    { input_tokens: 7, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 50_000 },
    { input_tokens: 100, output_tokens: 9, cache_creation_input_tokens: 250, cache_read_input_tokens: 4000 },
    {
      input_tokens: 12,
      output_tokens: 20,
      cache_creation_input_tokens: 3000,
      cache_read_input_tokens: 9000,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
    },
    {
      input_tokens: 5,
      output_tokens: 1,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    },
  ])('gives back what Anthropic reported, through the anthropic adapter and back: %j', (anthropic) => {
    expect(messagesUsageOf(reportedUsage(anthropic)!)).toEqual(anthropic);
  });

  it('splits the writes by lifetime (cache_creation) only where the adapter told the one-hour writes apart, clamped to the writes', () => {
    expect(
      messagesUsageOf({
        prompt_tokens: 1000,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 800, cache_write_1h_tokens: 300 },
      }),
    ).toEqual({
      input_tokens: 100,
      output_tokens: 1,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 800,
      cache_creation: { ephemeral_5m_input_tokens: 500, ephemeral_1h_input_tokens: 300 },
    });
    const clamped = messagesUsageOf({
      prompt_tokens: 10,
      completion_tokens: 0,
      prompt_tokens_details: { cache_write_tokens: 4, cache_write_1h_tokens: 9 },
    });
    expect(clamped.cache_creation).toEqual({ ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 4 });
    expect(
      messagesUsageOf({ prompt_tokens: 10, completion_tokens: 0, prompt_tokens_details: { cache_write_tokens: 4 } }),
    ).not.toHaveProperty('cache_creation');
  });
});

describe('a chat completion becomes an Anthropic Message', () => {
  it('carries text, the stop reason, usage and the faucet object', () => {
    expect(messageOfChatCompletion({ ...completion({ content: 'Hello.' }, 'stop'), faucet }, { callId: 'call_1' })).toEqual({
      id: 'msg_call_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'Hello.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      faucet,
    });
  });

  it('turns tool calls into tool_use blocks with their input parsed', () => {
    const message = messageOfChatCompletion(
      completion(
        {
          content: null,
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.txt"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'List', arguments: '' } },
          ],
        },
        'tool_calls',
      ),
      { callId: 'c' },
    );
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
      { type: 'tool_use', id: 'toolu_2', name: 'List', input: {} },
    ]);
    expect(message.stop_reason).toBe('tool_use');
  });

  it('hands over arguments that are not JSON as they came, rather than an input the model never wrote', () => {
    const message = messageOfChatCompletion(
      completion({ content: '', tool_calls: [{ id: 't', function: { name: 'Read', arguments: '{"file_pa' } }] }, 'length'),
      { callId: 'c' },
    );
    expect(message.content).toEqual([{ type: 'tool_use', id: 't', name: 'Read', input: '{"file_pa' }]);
    expect(message.stop_reason).toBe('max_tokens');
  });

  it('puts an upstream’s reasoning text first, as a thinking block', () => {
    const message = messageOfChatCompletion(completion({ content: '42', reasoning_content: 'six times seven' }, 'stop'), { callId: 'c' });
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'six times seven', signature: '' },
      { type: 'text', text: '42' },
    ]);
  });

  it('answers a refusal as text with stop_reason refusal', () => {
    const message = messageOfChatCompletion(completion({ content: null, refusal: 'I cannot help with that.' }, 'stop'), { callId: 'c' });
    expect(message.content).toEqual([{ type: 'text', text: 'I cannot help with that.' }]);
    expect(message.stop_reason).toBe('refusal');
  });

  it('reports the booked counts when the provider reported no usage', () => {
    const message = messageOfChatCompletion({ ...completion({ content: 'x' }, 'stop', null), faucet }, { callId: 'c' });
    expect(message.usage).toEqual({ input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it.each([
    ['stop', false, 'end_turn'],
    ['stop', true, 'tool_use'],
    ['length', false, 'max_tokens'],
    ['tool_calls', true, 'tool_use'],
    ['function_call', true, 'tool_use'],
    ['content_filter', false, 'refusal'],
    [null, false, null],
  ] as const)('maps finish_reason %s (tool use: %s) to %s', (finish, hasToolUse, stop) => {
    expect(stopReasonOf(finish, hasToolUse)).toBe(stop);
  });

  it('is the mirror image of the anthropic adapter: an Anthropic message translated there and back keeps content, stop reason and usage', () => {
    const anthropicMessage = {
      id: 'msg_upstream',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 30, output_tokens: 12, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000 },
    };
    const { id: _id, ...rest } = messageOfChatCompletion(fromAnthropicResponse(anthropicMessage, 1), { callId: 'c' });
    const { id: _upstreamId, ...expected } = anthropicMessage;
    expect(rest).toEqual(expected);
  });
});
