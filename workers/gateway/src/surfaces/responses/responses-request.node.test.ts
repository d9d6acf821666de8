import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { chatRequestSchema } from '../../openai/chat-schemas.ts';
import { chatRequestOfResponses } from './chat-request-of-responses.ts';
import { parseResponsesBody } from './responses-request.ts';

/** Parses a body and translates it, as the route will. */
function chatOf(body: Record<string, unknown>) {
  return chatRequestOfResponses(parseResponsesBody({ model: 'gpt-4o-mini', ...body }));
}

function refusal(body: Record<string, unknown>): FaucetError {
  try {
    chatOf(body);
  } catch (error) {
    if (FaucetError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('chatRequestOfResponses: the chat request the pipeline meters', () => {
  it('a string input is one user message; instructions come first as a system message', () => {
    const chat = chatOf({ input: 'Hi', instructions: 'Be brief.', max_output_tokens: 100, temperature: 0.2, top_p: 0.9 });
    expect(chat).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_completion_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
    });
    expect(chatRequestSchema.parse(chat)).toEqual(chat);
  });

  it('what the official client sends (typed by the openai package) translates', () => {
    const params = {
      model: 'gpt-4o-mini',
      input: [
        { role: 'developer', content: 'Answer in French.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
      ],
      max_output_tokens: 50,
      store: false,
    } satisfies ResponseCreateParamsNonStreaming;
    expect(chatRequestOfResponses(parseResponsesBody(params)).messages).toEqual([
      { role: 'developer', content: 'Answer in French.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
        ],
      },
    ]);
  });

  it('a tool round trip: the assistant text and its calls are one assistant message, each output a tool message; reasoning items are dropped', () => {
    const chat = chatOf({
      input: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Checking.', annotations: [] }],
        },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' },
        { type: 'function_call', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'rain' }] },
        { type: 'function_call', call_id: 'call_c', name: 'weather', arguments: '{}' },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'rain' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_c', type: 'function', function: { name: 'weather', arguments: '{}' } }],
      },
    ]);
  });

  it('an assistant refusal in the history is the message refusal', () => {
    const chat = chatOf({
      input: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
      ],
    });
    expect(chat.messages[1]).toEqual({ role: 'assistant', content: null, refusal: 'I cannot.' });
  });

  it('function tools, tool_choice and parallel_tool_calls', () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const chat = chatOf({
      input: 'x',
      tools: [
        { type: 'function', name: 'weather', description: 'Weather now', parameters, strict: true },
        { type: 'function', name: 'time', parameters: null, strict: null },
      ],
      tool_choice: { type: 'function', name: 'weather' },
      parallel_tool_calls: false,
    });
    expect(chat.tools).toEqual([
      { type: 'function', function: { name: 'weather', description: 'Weather now', parameters, strict: true } },
      { type: 'function', function: { name: 'time' } },
    ]);
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chatOf({ input: 'x', tool_choice: 'required' }).tool_choice).toBe('required');
  });

  it.each([
    [{ type: 'text' }, { type: 'text' }],
    [{ type: 'json_object' }, { type: 'json_object' }],
    [
      { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
      { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    ],
  ])('text.format %j is response_format %j', (format, responseFormat) => {
    expect(chatOf({ input: 'x', text: { format } }).response_format).toEqual(responseFormat);
  });

  it('reasoning effort, verbosity, user, safety_identifier and service_tier pass through; metadata and store do not go upstream', () => {
    const chat = chatOf({
      input: 'x',
      reasoning: { effort: 'low', summary: 'auto' },
      text: { verbosity: 'low' },
      user: 'u1',
      safety_identifier: 's1',
      service_tier: 'auto',
      metadata: { order: '42' },
      store: false,
      include: ['reasoning.encrypted_content'],
      truncation: 'disabled',
      previous_response_id: null,
      background: false,
    });
    expect(chat).toEqual({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x' }],
      reasoning_effort: 'low',
      verbosity: 'low',
      user: 'u1',
      safety_identifier: 's1',
      service_tier: 'auto',
    });
  });

  it('a streamed request is a streamed chat request (the adapters ask the provider for usage themselves)', () => {
    expect(chatOf({ input: 'x', stream: true })).toEqual({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
  });

  it("the body keeps Faucet's feature and route_mode beside the request", () => {
    const body = parseResponsesBody({ model: 'openai:gpt-4o-mini', input: 'x', feature: 'chat', route_mode: 'platform' });
    expect(body.feature).toBe('chat');
    expect(body.route_mode).toBe('platform');
    expect(chatRequestOfResponses(body)).toEqual({ model: 'openai:gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
  });
});

describe('refusals: a 400 invalid_request naming the field', () => {
  it.each([
    [
      { tools: [{ type: 'web_search' }] },
      'tools.0.type: tool type "web_search" is not accepted: only function tools are (web search is billed per call',
    ],
    [{ tools: [{ type: 'web_search_preview' }] }, 'tools.0.type: tool type "web_search_preview"'],
    [{ tools: [{ type: 'file_search', vector_store_ids: ['vs'] }] }, 'tools.0.type: tool type "file_search"'],
    [{ tools: [{ type: 'computer_use_preview' }] }, 'tools.0.type: tool type "computer_use_preview"'],
    [{ tools: [{ type: 'code_interpreter' }] }, 'tools.0.type: tool type "code_interpreter"'],
    [{ tools: [{ type: 'image_generation' }] }, 'tools.0.type: tool type "image_generation"'],
    [{ tools: [{ type: 'mcp', server_label: 'x' }] }, 'tools.0.type: tool type "mcp"'],
    [{ tools: [{ type: 'local_shell' }] }, 'tools.0.type: tool type "local_shell"'],
    [{ tools: [{ type: 'function', name: 'f', defer_loading: true }] }, 'tools.0: field "defer_loading" is not accepted'],
    [{ tool_choice: { type: 'web_search_preview' } }, 'tool_choice: tool_choice must be "auto", "none", "required"'],
    [{ previous_response_id: 'resp_1' }, 'previous_response_id: previous_response_id is not accepted: the gateway stores no responses'],
    [{ store: true }, 'store: store must be false or absent'],
    [{ conversation: 'conv_1' }, 'conversation: conversation is not accepted'],
    [{ background: true }, 'background: background must be false or absent'],
    [{ include: ['file_search_call.results'] }, 'include.0: "file_search_call.results" cannot be included'],
    [{ include: ['message.output_text.logprobs'] }, 'include.0: "message.output_text.logprobs" cannot be included'],
    [{ truncation: 'auto' }, 'truncation: truncation must be "disabled"'],
    [{ prompt: { id: 'pmpt_1' } }, 'body: field "prompt" is not accepted: stored prompt templates'],
    [{ top_logprobs: 2 }, 'body: field "top_logprobs" is not accepted'],
    [{ reasoning: { effort: 'max' } }, 'reasoning.effort: reasoning.effort must be'],
    [{ reasoning: { summary: 'detailed' } }, 'reasoning.summary: reasoning summaries are not returned'],
    [{ metadata: { k: 1 } }, 'metadata.k:'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input.0.type: item references need stored responses'],
    [{ input: [{ type: 'web_search_call', id: 'ws_1' }] }, 'input.0.type: input item type "web_search_call" is not accepted'],
    [
      { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] },
      'input.0.content.0.type: content part type "input_file" is not accepted',
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] },
      'input.0.content.0.image_url: input_image needs image_url',
    ],
    [
      { input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] },
      'input.0.content.0: images are accepted in user messages only',
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'refusal', refusal: 'no' }] }] },
      'input.0.content.0: refusals belong to assistant messages',
    ],
    [
      { input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'x' }] }] },
      'input.0.output.0.type: only input_text parts are accepted in a function call output',
    ],
    [{ input: [] }, 'input: at least one message is needed'],
    [{ service_tier: 'priority' }, 'service_tier: service_tier must be "auto" or "default"'],
    [{ max_output_tokens: 0 }, 'max_output_tokens:'],
    [{ temperature: 3 }, 'temperature:'],
  ])('%j', (body, message) => {
    const error = refusal({ input: 'x', ...body });
    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    expect(error.message).toContain(message);
  });

  it('a body that is not an object is refused', () => {
    expect(() => parseResponsesBody('hello')).toThrow(FaucetError);
  });

  it('a model name the chat route refuses is refused here', () => {
    expect(() => parseResponsesBody({ model: 'has space', input: 'x' })).toThrow(/model:/);
  });
});
