import type { Response, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { parseResponsesBody } from './responses-request.ts';
import { type ResponsesStreamEvent, ResponsesStreamTranslator } from './responses-stream.ts';

const ids = { callId: '0b6f2a40-6d0c-4a39-9a38-5b1f7c3e9d21', createdAt: 1_790_000_000 };
const hex = '0b6f2a406d0c4a399a385b1f7c3e9d21';
const request = parseResponsesBody({ model: 'gpt-4o-mini', input: 'Hi', stream: true, metadata: { order: '42' } });

const faucet: FaucetObject = {
  request_id: 'req_1',
  route_mode: 'platform',
  provider: 'openai',
  model: 'gpt-4o-mini',
  input_tokens: 20,
  output_tokens: 9,
  estimated: false,
  charge: { currency: 'USD', amount_usd: '0.000009', upstream_cost_usd: '0.000007' },
};

/** The official event types, but `access_programs` (a program flag the gateway has none of) on the response. */
type OfficialEvent = ResponseStreamEvent extends infer Event
  ? Event extends { response: Response }
    ? Omit<Event, 'response'> & { response: Omit<Response, 'access_programs'> }
    : Event
  : never;

type Delta = ChatCompletionChunk['choices'][number]['delta'];

function chunk(delta: Delta, finishReason: string | null = null): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

const usageChunk: ChatCompletionChunk = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [],
  usage: {
    prompt_tokens: 20,
    completion_tokens: 9,
    total_tokens: 29,
    prompt_tokens_details: { cached_tokens: 16 },
    completion_tokens_details: { reasoning_tokens: 4 },
  },
};

function translate(chunks: ChatCompletionChunk[], end: (translator: ResponsesStreamTranslator) => ResponsesStreamEvent[]) {
  const translator = new ResponsesStreamTranslator(request, ids);
  const events = [...translator.start(), ...chunks.flatMap((each) => translator.push(each)), ...end(translator)];
  // Each event is one the official types describe.
  const typed: OfficialEvent[] = events;
  expect(typed.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
  return events;
}

const byType = <Type extends ResponsesStreamEvent['type']>(events: ResponsesStreamEvent[], type: Type) =>
  events.filter((event): event is ResponsesStreamEvent & { type: Type } => event.type === type);

describe('ResponsesStreamTranslator', () => {
  it('text: the events in OpenAI order, numbered from 0, ending with usage (cached, reasoning) and the faucet object', () => {
    const events = translate(
      [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), usageChunk],
      (translator) => translator.finish(faucet),
    );
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const [created] = byType(events, 'response.created');
    expect(created?.response).toMatchObject({
      id: `resp_${hex}`,
      status: 'in_progress',
      output: [],
      model: 'gpt-4o-mini',
      metadata: { order: '42' },
    });
    expect(
      byType(events, 'response.output_text.delta').map((event) => [event.item_id, event.output_index, event.content_index, event.delta]),
    ).toEqual([
      [`msg_${hex}_0`, 0, 0, 'Hel'],
      [`msg_${hex}_0`, 0, 0, 'lo'],
    ]);
    expect(byType(events, 'response.output_text.done')[0]?.text).toBe('Hello');
    const [completed] = byType(events, 'response.completed');
    expect(completed?.response).toMatchObject({
      status: 'completed',
      model: 'gpt-4o-mini-2024-07-18',
      output: [{ type: 'message', id: `msg_${hex}_0`, status: 'completed', content: [{ type: 'output_text', text: 'Hello' }] }],
      output_text: 'Hello',
      usage: {
        input_tokens: 20,
        input_tokens_details: { cached_tokens: 16, cache_write_tokens: 0 },
        output_tokens: 9,
        output_tokens_details: { reasoning_tokens: 4 },
        total_tokens: 29,
      },
      faucet,
    });
  });

  it('text then parallel tool calls with interleaved arguments: the message closes when the first call opens, each delta reaches its own item', () => {
    const events = translate(
      [
        chunk({ role: 'assistant', content: 'Checking.' }),
        chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'time', arguments: '{"tz":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '"CET"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk,
      ],
      (translator) => translator.finish(faucet),
    );
    expect(events.map((event) => `${event.type}${'output_index' in event ? `@${event.output_index}` : ''}`)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added@0',
      'response.content_part.added@0',
      'response.output_text.delta@0',
      'response.output_text.done@0',
      'response.content_part.done@0',
      'response.output_item.done@0',
      'response.output_item.added@1',
      'response.function_call_arguments.delta@1',
      'response.output_item.added@2',
      'response.function_call_arguments.delta@2',
      'response.function_call_arguments.delta@1',
      'response.function_call_arguments.delta@2',
      'response.function_call_arguments.done@1',
      'response.output_item.done@1',
      'response.function_call_arguments.done@2',
      'response.output_item.done@2',
      'response.completed',
    ]);
    expect(byType(events, 'response.output_item.added')[1]?.item).toEqual({
      type: 'function_call',
      id: `fc_${hex}_1`,
      call_id: 'call_a',
      name: 'weather',
      arguments: '',
      status: 'in_progress',
    });
    expect(byType(events, 'response.function_call_arguments.done').map((event) => [event.item_id, event.arguments])).toEqual([
      [`fc_${hex}_1`, '{"city":"Paris"}'],
      [`fc_${hex}_2`, '{"tz":"CET"}'],
    ]);
    const [completed] = byType(events, 'response.completed');
    expect(completed?.response.output).toEqual([
      {
        type: 'message',
        id: `msg_${hex}_0`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Checking.', annotations: [], logprobs: [] }],
      },
      { type: 'function_call', id: `fc_${hex}_1`, call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'function_call', id: `fc_${hex}_2`, call_id: 'call_b', name: 'time', arguments: '{"tz":"CET"}', status: 'completed' },
    ]);
  });

  it('text after a tool call opens a new message item', () => {
    const events = translate(
      [
        chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'f', arguments: '{}' } }] }),
        chunk({ content: 'Done.' }),
        chunk({}, 'stop'),
      ],
      (translator) => translator.finish(),
    );
    const [completed] = byType(events, 'response.completed');
    expect(completed?.response.output.map((item) => [item.type, item.id])).toEqual([
      ['function_call', `fc_${hex}_0`],
      ['message', `msg_${hex}_1`],
    ]);
  });

  it('a tool call opens only once its id and name are known; its earlier arguments come as one delta', () => {
    const events = translate(
      [
        chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":' } }] }),
        chunk({ tool_calls: [{ index: 0, id: 'call_late', function: { arguments: '1}' } }] }),
        chunk({}, 'tool_calls'),
      ],
      (translator) => translator.finish(),
    );
    expect(events.map((event) => event.type).slice(2, 4)).toEqual(['response.output_item.added', 'response.function_call_arguments.delta']);
    expect(byType(events, 'response.function_call_arguments.delta')[0]?.delta).toBe('{"a":1}');
    expect(byType(events, 'response.output_item.done')[0]?.item).toMatchObject({ call_id: 'call_late', arguments: '{"a":1}' });
  });

  it("a tool call the provider never gave an id gets one of the call's own at the end", () => {
    const events = translate([chunk({ tool_calls: [{ index: 3, function: { name: 'f', arguments: '{}' } }] })], (translator) =>
      translator.finish(),
    );
    expect(byType(events, 'response.output_item.done')[0]?.item).toMatchObject({ call_id: `call_${hex}_3`, name: 'f', arguments: '{}' });
  });

  it('stopped at the token limit: response.incomplete with reason max_output_tokens, its items incomplete', () => {
    const events = translate([chunk({ content: 'Once upon' }), chunk({}, 'length'), usageChunk], (translator) => translator.finish(faucet));
    const last = events.at(-1);
    expect(last?.type).toBe('response.incomplete');
    expect(last).toMatchObject({
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ status: 'incomplete' }] },
    });
    expect(byType(events, 'response.output_item.done')[0]?.item.status).toBe('incomplete');
  });

  it('a refusal streams as a refusal part', () => {
    const events = translate([chunk({ refusal: 'I cannot' }), chunk({ refusal: ' help.' }), chunk({}, 'stop')], (translator) =>
      translator.finish(),
    );
    expect(events.map((event) => event.type).slice(3, 8)).toEqual([
      'response.content_part.added',
      'response.refusal.delta',
      'response.refusal.delta',
      'response.refusal.done',
      'response.content_part.done',
    ]);
    expect(byType(events, 'response.refusal.done')[0]?.refusal).toBe('I cannot help.');
  });

  it('a failure mid-stream: response.failed with what was produced (open items incomplete) and usage, then an error event', () => {
    const events = translate([chunk({ content: 'Hel' })], (translator) =>
      translator.fail({ code: 'upstream_error', message: 'The upstream stream failed.', request_id: 'req_1' }, faucet),
    );
    expect(events.slice(-2)).toEqual([
      expect.objectContaining({
        type: 'response.failed',
        response: expect.objectContaining({
          status: 'failed',
          error: { code: 'server_error', message: 'The upstream stream failed.' },
          output: [expect.objectContaining({ status: 'incomplete', content: [expect.objectContaining({ text: 'Hel' })] })],
          usage: expect.objectContaining({ input_tokens: 20, output_tokens: 9 }),
          faucet,
        }),
      }),
      {
        type: 'error',
        code: 'upstream_error',
        message: 'The upstream stream failed.',
        param: null,
        request_id: 'req_1',
        sequence_number: 6,
      },
    ]);
  });

  it('nothing follows the end', () => {
    const translator = new ResponsesStreamTranslator(request, ids);
    translator.start();
    expect(translator.finish()).toHaveLength(1);
    expect(translator.push(chunk({ content: 'late' }))).toEqual([]);
    expect(translator.finish()).toEqual([]);
    expect(translator.fail({ code: 'upstream_error', message: 'x' })).toEqual([]);
  });
});
