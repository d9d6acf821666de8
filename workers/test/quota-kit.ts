/**
 * Test support for holds that grow with the answer (docs/quota.md): a fake provider that generates
 * as it is read and counts its own tokens (what it would bill), and a streamed call read whole.
 */
import type { TestEnv } from './harness.ts';
import { fakeUpstream, type RecordedRequest } from './fake-upstream.ts';
import { type gatewayWith, newRequestId, openStream, sseData } from './gateway-kit.ts';

export const costly = {
  model: 'openai:gpt-4o',
  feature: 'chat',
  messages: [{ role: 'user', content: 'Write a long story' }],
  max_tokens: 32_000,
};

export interface Generation {
  /** Output tokens the fake provider generated for the call (what it bills). */
  output: number;
  aborted: boolean;
}

/**
 * A provider that generates `tokensPerChunk` tokens (4 bytes each) per chunk as it is read, up to the
 * request's max tokens, then reports its usage; aborted, it generates `afterAbort` tokens more before
 * it notices. `burstAt`: the chunk of that index carries `burstTokens` tokens at once.
 */
export function generatingProvider(
  options: { tokensPerChunk?: number; afterAbort?: number; burstAt?: number; burstTokens?: number; reportUsage?: boolean } = {},
) {
  const { tokensPerChunk = 10, afterAbort = 0, reportUsage = true } = options;
  const generations = new Map<RecordedRequest, Generation>();
  const encoder = new TextEncoder();
  const event = (value: unknown) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'chatcmpl-gen',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'gpt-4o',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const upstream = fakeUpstream((request, signal) => {
    const body = request.body as { max_tokens?: number; max_completion_tokens?: number };
    const limit = body.max_completion_tokens ?? body.max_tokens ?? 4096;
    const generation: Generation = { output: 0, aborted: false };
    generations.set(request, generation);
    let index = 0;
    let ended = false;
    const abort = () => {
      if (ended) return;
      ended = true;
      generation.aborted = true;
      generation.output += afterAbort;
    };
    signal.addEventListener('abort', abort, { once: true });
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (ended) return;
        if (generation.output >= limit) {
          ended = true;
          controller.enqueue(event(chunk({}, 'length')));
          if (reportUsage) {
            const usage = { prompt_tokens: 12, completion_tokens: generation.output, total_tokens: 12 + generation.output };
            controller.enqueue(event({ ...chunk({}), choices: [], usage }));
          }
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
          return;
        }
        const tokens = Math.min(
          index === options.burstAt ? (options.burstTokens ?? tokensPerChunk) : tokensPerChunk,
          limit - generation.output,
        );
        index += 1;
        generation.output += tokens;
        controller.enqueue(event(chunk({ ...(index === 1 ? { role: 'assistant' } : {}), content: 'word'.repeat(tokens) })));
      },
      cancel: abort,
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
  });
  return { upstream, generations, usageOf: (request: RecordedRequest) => usageOf(generations.get(request)) };
}

function usageOf(generation: Generation | undefined) {
  const output = generation?.output ?? 0;
  return { prompt_tokens: 12, completion_tokens: output, total_tokens: 12 + output };
}

export async function stream(
  testEnv: TestEnv,
  app: ReturnType<typeof gatewayWith>,
  token: string,
  body: Record<string, unknown>,
  requestId = newRequestId(),
) {
  const { response, finished } = await openStream(app, testEnv, token, body, requestId);
  const text = await response.text();
  await finished();
  const events = response.status === 200 ? sseData(text) : [];
  const parsed = events.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as Record<string, any>);
  return {
    status: response.status,
    text,
    requestId,
    done: events.at(-1) === '[DONE]',
    finishReasons: parsed
      .flatMap((event) => (event.choices ?? []).map((choice: { finish_reason: string | null }) => choice.finish_reason))
      .filter(Boolean),
    faucet: parsed.find((event) => event.faucet !== undefined)?.faucet as Record<string, any> | undefined,
    contentBytes: parsed.reduce((sum, event) => sum + new TextEncoder().encode(event.choices?.[0]?.delta?.content ?? '').byteLength, 0),
  };
}
