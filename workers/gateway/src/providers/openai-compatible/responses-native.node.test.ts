import { describe, expect, it } from 'vitest';
import { providerCatalog } from '#shared/providers/provider-catalog.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { upstreamEvents, upstreamResponse, upstreamSse } from '../../../../test/responses-kit.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { NativeResponsesRelay } from '../../surfaces/responses/native-responses-relay.ts';
import { chunksFromResponsesSse, completionOfResponse, nativeResponsesBody, responsesUrl } from './responses-native.ts';
import { faucetFixture } from '../../../../test/faucet-fixture.ts';

const label = 'The upstream provider';

function body(parts: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(encoder.encode(part));
      controller.close();
    },
  });
}

async function collect(parts: string[]): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of chunksFromResponsesSse(body(parts), label)) chunks.push(chunk);
  return chunks;
}

describe('the Responses API natively: where, and what is sent', () => {
  it("is OpenAI's root's responses, and Azure's v1 API under its resource root (its chat api-version left out)", () => {
    expect(responsesUrl('https://api.openai.com/v1', providerCatalog.openai.dialect)).toBe('https://api.openai.com/v1/responses');
    expect(responsesUrl('https://acme.openai.azure.com/openai/?api-version=2024-10-21', providerCatalog.azure.dialect)).toBe(
      'https://acme.openai.azure.com/openai/v1/responses',
    );
    expect(providerCatalog.groq.dialect.responsesApi).toBe(false);
  });

  it("sends the client's request with the candidate's model and output limit, streamed or not, and never stored", () => {
    const native = { model: 'openai:gpt-4o', input: 'Hi', instructions: 'Be brief.', max_output_tokens: 9_000, stream: true, store: false };
    expect(nativeResponsesBody(native, { model: 'gpt-4o', messages: [], max_completion_tokens: 500 }, false)).toEqual({
      model: 'gpt-4o',
      input: 'Hi',
      instructions: 'Be brief.',
      max_output_tokens: 500,
      stream: false,
      store: false,
    });
    // No limit asked and no feature cap: none sent, as the client wrote it.
    expect(nativeResponsesBody({ input: 'Hi' }, { model: 'gpt-4o', messages: [] }, true)).toEqual({
      input: 'Hi',
      model: 'gpt-4o',
      stream: true,
      store: false,
    });
  });
});

describe('what comes back, in chat terms for the metered stream', () => {
  it('streams each delta as a chunk carrying its event, and ends with the usage (cached and reasoning parts) and the response', async () => {
    const events = upstreamEvents();
    const chunks = await collect(upstreamSse(events));
    expect(chunks.map((chunk) => chunk.responses_event)).toEqual(events);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe('Hello there.');
    expect(deltas.map((delta) => delta.reasoning_content ?? '').join('')).toBe('Thinking.');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    expect(last.usage).toEqual({
      prompt_tokens: 30,
      completion_tokens: 20,
      total_tokens: 50,
      prompt_tokens_details: { cached_tokens: 10 },
      completion_tokens_details: { reasoning_tokens: 5 },
    });
    expect(last.responses_response).toMatchObject({ id: 'resp_upstream_1', status: 'completed' });
    expect(last).toMatchObject({ id: 'resp_upstream_1', model: 'gpt-4o-mini-2024-07-18' });
  });

  it('announces a function call with its id and name, then its arguments by output index; ended as tool_calls', async () => {
    const call = { id: 'fc_1', type: 'function_call', call_id: 'call_9', name: 'weather', arguments: '', status: 'in_progress' };
    const done = { ...upstreamResponse('completed'), output: [{ ...call, arguments: '{"city":"Paris"}', status: 'completed' }] };
    const chunks = await collect(
      upstreamSse([
        { type: 'response.created', response: upstreamResponse('in_progress') },
        { type: 'response.output_item.added', output_index: 2, item: call },
        { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 2, delta: '{"city"' },
        { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 2, delta: ':"Paris"}' },
        { type: 'response.completed', response: done },
      ]),
    );
    const calls = chunks.flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(calls).toEqual([
      { index: 2, id: 'call_9', type: 'function', function: { name: 'weather', arguments: '' } },
      { index: 2, function: { arguments: '{"city"' } },
      { index: 2, function: { arguments: ':"Paris"}' } },
    ]);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('ends an incomplete response at its output limit as length', async () => {
    const chunks = await collect(upstreamSse([{ type: 'response.incomplete', response: upstreamResponse('incomplete') }]));
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('length');
  });

  it('fails on an error event, a failed response, a stream cut before its response ended, or an event that is not JSON', async () => {
    for (const parts of [
      upstreamSse(upstreamEvents({ failAfterCreated: true })),
      upstreamSse([{ type: 'response.failed', response: { ...upstreamResponse('in_progress'), status: 'failed' } }]),
      upstreamSse(upstreamEvents().slice(0, 5)),
      ['data: {not json\n\n'],
    ]) {
      await expect(collect(parts)).rejects.toBeInstanceOf(FaucetError);
    }
  });

  it('reads a whole response into a completion, the response kept as it is', () => {
    const completion = completionOfResponse(upstreamResponse('completed'), label);
    expect(completion).toMatchObject({
      id: 'resp_upstream_1',
      model: 'gpt-4o-mini-2024-07-18',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello there.', reasoning_content: 'Thinking.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 20 },
      responses_response: upstreamResponse('completed'),
    });
    expect(completionOfResponse(upstreamResponse('incomplete'), label).choices[0]?.finish_reason).toBe('length');
    expect(() => completionOfResponse({ object: 'chat.completion' }, label)).toThrow(FaucetError);
  });
});

describe('the relay of those events to the client', () => {
  const faucet = faucetFixture({ provider: 'openai', model: 'gpt-4o-mini', input_tokens: 30, output_tokens: 20 });

  it('passes each event on, numbered in order, and holds the final one until the faucet object is known', () => {
    const relay = new NativeResponsesRelay();
    const events = upstreamEvents();
    const sent = events.flatMap((event) => relay.push({ ...event, type: String(event.type) }));
    expect(sent).toHaveLength(events.length - 1);
    expect(sent.map((event) => event.sequence_number)).toEqual(sent.map((_, index) => index));
    const [final] = relay.finish(faucet);
    expect(final).toMatchObject({
      type: 'response.completed',
      sequence_number: events.length - 1,
      response: { id: 'resp_upstream_1', faucet },
    });
    expect(relay.finish(faucet)).toEqual([]);
  });

  it('cut before its final event: response.incomplete for max_output_tokens, with the output streamed so far and the usage booked', () => {
    const relay = new NativeResponsesRelay();
    // Up to the first text delta: the reasoning done, the message open with "Hello".
    for (const event of upstreamEvents().slice(0, 10)) relay.push({ ...event, type: String(event.type) });
    const [final] = relay.finish({ ...faucet, estimated: true, cut_reason: 'insufficient_balance' });
    expect(final).toMatchObject({
      type: 'response.incomplete',
      response: {
        id: 'resp_upstream_1',
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        output: [
          { type: 'reasoning', summary: [{ text: 'Thinking.' }] },
          { type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: 'Hello' }] },
        ],
        usage: { input_tokens: 30, output_tokens: 20 },
        faucet: { cut_reason: 'insufficient_balance' },
      },
    });
  });

  it('fails as the translated stream does: response.failed, then error naming the code', () => {
    const relay = new NativeResponsesRelay();
    relay.push({ ...upstreamEvents()[0]!, type: 'response.created' });
    const sent = relay.fail({ code: 'upstream_error', message: 'The upstream stream failed.', request_id: 'req_1' });
    expect(sent.map((event) => event.type)).toEqual(['response.failed', 'error']);
    expect(sent[0]).toMatchObject({ response: { id: 'resp_upstream_1', status: 'failed', error: { code: 'server_error' } } });
    expect(sent[1]).toMatchObject({ code: 'upstream_error', request_id: 'req_1', sequence_number: 2 });
  });
});
