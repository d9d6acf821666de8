import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { formatSseJson } from '#shared/wire/format-sse.ts';
import { parseSse } from '#shared/wire/sse.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import type { MeteredUsage } from '../../metering/metered-usage.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { meteredStream } from '../../streaming/metered-stream.ts';
import { responsesEventStream } from './responses-event-stream.ts';
import { parseResponsesBody } from './responses-request.ts';
import { ResponsesStreamTranslator } from './responses-stream.ts';

const ids = { callId: '0b6f2a40-6d0c-4a39-9a38-5b1f7c3e9d21', createdAt: 1_790_000_000 };
const request = parseResponsesBody({ model: 'gpt-4o-mini', input: 'Weather in Paris?', stream: true });

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

function chunk(delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: string | null = null): ChatCompletionChunk {
  return {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

const usageChunk: ChatCompletionChunk = {
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [],
  usage: {
    prompt_tokens: 20,
    completion_tokens: 9,
    prompt_tokens_details: { cached_tokens: 16 },
    completion_tokens_details: { reasoning_tokens: 4 },
  },
};

const toolRound = [
  chunk({ role: 'assistant', content: 'Checking. ' }),
  chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city"' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: ':"Paris"}' } }] }),
  chunk({}, 'tool_calls'),
  usageChunk,
];

/** The metered stream as the chat route builds it (usage forwarded), its settlement recorded. */
function metered(chunks: AsyncIterable<ChatCompletionChunk>, options: { drainMs?: number } = {}) {
  const settled: MeteredUsage[] = [];
  let abandoned = false;
  const deferred: Promise<unknown>[] = [];
  const stream = meteredStream({
    chunks,
    includeUsage: true,
    bounds: { inputTokens: 1000, outputTokens: 1000 },
    requestId: 'req_1',
    deadlineMs: 60_000,
    drainMs: options.drainMs ?? 1000,
    settle: async (usage) => {
      settled.push(usage);
      return faucet;
    },
    abandon: async () => {
      abandoned = true;
    },
    stopUpstream: () => undefined,
    defer: (work) => deferred.push(work),
    onSettleFailure: () => undefined,
  });
  return { stream, settled, deferred, abandoned: () => abandoned };
}

async function* upstream(chunks: ChatCompletionChunk[], failAfter?: Error): AsyncGenerator<ChatCompletionChunk> {
  for (const each of chunks) yield each;
  if (failAfter) throw failAfter;
}

function responses(stream: ReadableStream<Uint8Array>) {
  return responsesEventStream(stream, new ResponsesStreamTranslator(request, ids));
}

async function eventsOf(stream: ReadableStream<Uint8Array>) {
  const events: Array<{ event: string | undefined; data: Record<string, unknown> }> = [];
  for await (const event of parseSse(stream)) events.push({ event: event.event, data: JSON.parse(event.data) });
  return events;
}

/** The official client, its requests answered by `body`. */
function clientAnswering(body: () => ReadableStream<Uint8Array>) {
  return new OpenAI({
    apiKey: 'fvs_test',
    baseURL: 'http://gateway.test/v1',
    fetch: async () => new Response(body(), { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
}

describe('responsesEventStream after the metered stream', () => {
  it("sends named Responses events and no [DONE]; the metered stream books the provider's usage as before", async () => {
    const call = metered(upstream(toolRound));
    const events = await eventsOf(responses(call.stream));
    for (const { event, data } of events) expect(event).toBe(data.type);
    expect(events.map(({ data }) => data.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.at(-1)?.data).toMatchObject({
      type: 'response.completed',
      response: {
        status: 'completed',
        usage: {
          input_tokens: 20,
          input_tokens_details: { cached_tokens: 16 },
          output_tokens: 9,
          output_tokens_details: { reasoning_tokens: 4 },
        },
        faucet,
      },
    });
    expect(call.settled).toEqual([
      { estimated: false, tokens: expect.objectContaining({ input: 4, cachedInput: 16, output: 9, reasoning: 4 }) },
    ]);
  });

  it("the official client's stream helper accumulates it: text, the function call, usage, the faucet field", async () => {
    const client = clientAnswering(() => responses(metered(upstream(toolRound)).stream));
    const seen: string[] = [];
    const stream = client.responses.stream({ model: 'gpt-4o-mini', input: 'Weather in Paris?' });
    stream.on('response.output_text.delta', (event) => seen.push(event.delta));
    stream.on('response.function_call_arguments.delta', (event) => seen.push(event.delta));
    const response = await stream.finalResponse();
    expect(seen).toEqual(['Checking. ', '{"city"', ':"Paris"}']);
    expect(response.output_text).toBe('Checking. ');
    expect(response.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(response.output[1]).toMatchObject({ type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}' });
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(4);
    expect((response as unknown as { faucet: FaucetObject }).faucet).toEqual(faucet);
  });

  it('stopped at the token limit, the official client reads an incomplete response', async () => {
    const client = clientAnswering(() =>
      responses(metered(upstream([chunk({ content: 'Once' }), chunk({}, 'length'), usageChunk])).stream),
    );
    const response = await client.responses.stream({ model: 'gpt-4o-mini', input: 'x' }).finalResponse();
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details?.reason).toBe('max_output_tokens');
  });

  it('an upstream failing mid-stream: what was delivered is booked, the client gets response.failed then an error event (the SDK throws)', async () => {
    const call = metered(upstream([chunk({ content: 'Hel' })], new Error('connection reset')));
    const events = await eventsOf(responses(call.stream));
    expect(events.slice(-2).map(({ data }) => data.type)).toEqual(['response.failed', 'error']);
    expect(events.at(-2)?.data).toMatchObject({
      response: { status: 'failed', error: { code: 'server_error', message: 'The upstream stream failed.' }, faucet },
    });
    expect(events.at(-1)?.data).toMatchObject({
      code: 'upstream_error',
      message: 'The upstream stream failed.',
      request_id: 'req_1',
      param: null,
    });
    expect(call.settled).toHaveLength(1);

    const client = clientAnswering(() => responses(metered(upstream([chunk({ content: 'Hel' })], new Error('reset'))).stream));
    const raw = await client.responses.create({ model: 'gpt-4o-mini', input: 'x', stream: true });
    const types: string[] = [];
    await expect(
      (async () => {
        for await (const event of raw) types.push(event.type);
      })(),
    ).rejects.toThrow(/The upstream stream failed/);
    expect(types.at(-1)).toBe('response.failed');
  });

  it('an upstream failing before any output: the call is abandoned, the client still gets response.failed and error', async () => {
    const call = metered(upstream([], new Error('refused')));
    const events = await eventsOf(responses(call.stream));
    expect(events.map(({ data }) => data.type)).toEqual(['response.created', 'response.in_progress', 'response.failed', 'error']);
    expect(call.abandoned()).toBe(true);
  });

  it('a client that goes away cancels the metered stream, which drains the upstream for its usage and books it', async () => {
    let release: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* slow(): AsyncGenerator<ChatCompletionChunk> {
      yield chunk({ content: 'Hel' });
      await waiting;
      yield chunk({ content: 'lo' }, 'stop');
      yield usageChunk;
    }
    const call = metered(slow());
    const reader = responses(call.stream).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('response.output_text.delta')) text += decoder.decode((await reader.read()).value);
    await reader.cancel();
    release();
    await Promise.all(call.deferred);
    expect(call.settled).toEqual([{ estimated: false, tokens: expect.objectContaining({ cachedInput: 16, output: 9 }) }]);
  });

  it('a stream that ends without [DONE] or an error is reported as failed', async () => {
    const truncated = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(formatSseJson(chunk({ content: 'Hel' })));
        controller.close();
      },
    });
    const events = await eventsOf(responses(truncated));
    expect(events.slice(-2).map(({ data }) => [data.type, data.code ?? null])).toEqual([
      ['response.failed', null],
      ['error', 'upstream_error'],
    ]);
  });
});
