import OpenAI from 'openai';
import type { Response as OpenAiResponse } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import type { ChatCompletion } from '../../openai/chat-schemas.ts';
import { parseResponsesBody } from './responses-request.ts';
import { responseOfChatCompletion } from './responses-response.ts';

const ids = { callId: '0b6f2a40-6d0c-4a39-9a38-5b1f7c3e9d21', createdAt: 1_790_000_000 };
const hex = '0b6f2a406d0c4a399a385b1f7c3e9d21';

const faucet: FaucetObject = {
  request_id: 'req_1',
  feature: 'chat',
  route_mode: 'platform',
  provider: 'openai',
  model: 'gpt-4o-mini',
  input_tokens: 120,
  output_tokens: 30,
  estimated: false,
  charge: { currency: 'USD', amount_usd: '0.000036', upstream_cost_usd: '0.000030' },
};

function completion(
  message: ChatCompletion['choices'][number]['message'],
  finishReason = 'stop',
): ChatCompletion & { faucet: FaucetObject } {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_790_000_001,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message, finish_reason: finishReason }],
    usage: {
      prompt_tokens: 120,
      completion_tokens: 30,
      total_tokens: 150,
      prompt_tokens_details: { cached_tokens: 100 },
      completion_tokens_details: { reasoning_tokens: 12 },
    },
    faucet,
  };
}

const request = parseResponsesBody({
  model: 'gpt-4o-mini',
  input: 'Hi',
  instructions: 'Be brief.',
  metadata: { order: '42' },
  temperature: 0.5,
  tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: true }],
});

describe('responseOfChatCompletion', () => {
  it('text: one message item, usage with cached and reasoning detail, the request echoed, the faucet object kept', () => {
    const response = responseOfChatCompletion(completion({ role: 'assistant', content: 'Hello!' }), request, ids);
    expect(response).toMatchObject({
      id: `resp_${hex}`,
      object: 'response',
      created_at: ids.createdAt,
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: 'gpt-4o-mini-2024-07-18',
      instructions: 'Be brief.',
      metadata: { order: '42' },
      temperature: 0.5,
      top_p: null,
      store: false,
      tool_choice: 'auto',
      tools: [{ type: 'function', name: 'weather', description: null, parameters: { type: 'object' }, strict: true }],
      text: { format: { type: 'text' } },
      output: [
        {
          type: 'message',
          id: `msg_${hex}_0`,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }],
        },
      ],
      output_text: 'Hello!',
      usage: {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 100, cache_write_tokens: 0 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 12 },
        total_tokens: 150,
      },
      faucet,
    });
  });

  it('text and tool calls: the message first, then one function_call item per call, its call_id the chat tool call id', () => {
    const response = responseOfChatCompletion(
      completion(
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        'tool_calls',
      ),
      request,
      ids,
    );
    expect(response.status).toBe('completed');
    expect(response.output.map((item) => [item.type, item.id])).toEqual([
      ['message', `msg_${hex}_0`],
      ['function_call', `fc_${hex}_1`],
      ['function_call', `fc_${hex}_2`],
    ]);
    expect(response.output[2]).toEqual({
      type: 'function_call',
      id: `fc_${hex}_2`,
      call_id: 'call_b',
      name: 'weather',
      arguments: '{"city":"Rome"}',
      status: 'completed',
    });
  });

  it('a provider stopped at the token limit: incomplete, reason max_output_tokens', () => {
    const response = responseOfChatCompletion(completion({ role: 'assistant', content: 'Once upon' }, 'length'), request, ids);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
  });

  it('a content filter stop is incomplete with reason content_filter; a refusal is a refusal part', () => {
    const response = responseOfChatCompletion(
      completion({ role: 'assistant', content: null, refusal: 'I cannot help with that.' }, 'content_filter'),
      request,
      ids,
    );
    expect(response.incomplete_details).toEqual({ reason: 'content_filter' });
    expect(response.output[0]).toMatchObject({ content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] });
    expect(response.output_text).toBe('');
  });

  it('cache writes a provider reports (Faucet-only detail) are carried', () => {
    const answered = completion({ role: 'assistant', content: 'x' });
    answered.usage = { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 2, cache_write_tokens: 5 } };
    expect(responseOfChatCompletion(answered, request, ids).usage).toEqual({
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 2, cache_write_tokens: 5 },
      output_tokens: 1,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 11,
    });
  });

  it("without the provider's usage, the usage is what the call was billed at (the faucet object)", () => {
    const answered = completion({ role: 'assistant', content: 'x' });
    answered.usage = null;
    expect(responseOfChatCompletion(answered, request, ids).usage).toMatchObject({
      input_tokens: 120,
      output_tokens: 30,
      total_tokens: 150,
    });
  });

  it('is an openai Response by the official types (but access_programs, a program flag the gateway has none of)', () => {
    const response = responseOfChatCompletion(completion({ role: 'assistant', content: 'Hello!' }), request, ids);
    const typed: Omit<OpenAiResponse, 'access_programs'> = response;
    expect(typed.id).toBe(`resp_${hex}`);
  });

  it('the official client reads it: output_text, usage and the extra faucet field', async () => {
    const body = responseOfChatCompletion(completion({ role: 'assistant', content: 'Hello!' }), request, ids);
    let sent: unknown;
    const client = new OpenAI({
      apiKey: 'fvs_test',
      baseURL: 'http://gateway.test/v1',
      fetch: async (_url, init) => {
        sent = JSON.parse(String(init?.body));
        return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    const response = await client.responses.create({ model: 'gpt-4o-mini', input: 'Hi', instructions: 'Be brief.' });
    // What the client sent is what the surface accepts.
    expect(() => parseResponsesBody(sent)).not.toThrow();
    expect(response.output_text).toBe('Hello!');
    expect(response.usage?.input_tokens_details.cached_tokens).toBe(100);
    expect((response as unknown as { faucet: FaucetObject }).faucet.charge.amount_usd).toBe('0.000036');
  });
});
