/**
 * Upstreams played in-process: a FetchFunction that records what the gateway sent and answers from
 * a script, so provider and gateway tests never touch the network.
 */
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

export interface RecordedRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

export interface FakeUpstream {
  fetch: FetchFunction;
  requests: RecordedRequest[];
}

export function fakeUpstream(answer: (request: RecordedRequest, signal: AbortSignal) => Response | Promise<Response>): FakeUpstream {
  const requests: RecordedRequest[] = [];
  return {
    requests,
    fetch: async (request) => {
      const text = await request.text();
      const recorded: RecordedRequest = {
        url: request.url,
        method: request.method,
        headers: Object.fromEntries(request.headers),
        body: text === '' ? undefined : (JSON.parse(text) as unknown),
      };
      requests.push(recorded);
      return answer(recorded, request.signal);
    },
  };
}

export function jsonResponse(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** An SSE response from pre-rendered events (each already ending in a blank line). */
export function sseResponse(events: Array<string | Uint8Array>): Response {
  const encoder = new TextEncoder();
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of events) controller.enqueue(typeof event === 'string' ? encoder.encode(event) : event);
        controller.close();
      },
    }),
    { headers: { 'content-type': 'text/event-stream' } },
  );
}

/**
 * An SSE response that sends `events` and then stays open until the request is aborted, like a
 * model still generating; `cancelled` resolves when the gateway stops reading.
 */
export function openSseResponse(events: Array<string | Uint8Array>, signal: AbortSignal): { response: Response; cancelled: Promise<void> } {
  const encoder = new TextEncoder();
  let markCancelled: () => void = () => undefined;
  const cancelled = new Promise<void>((resolve) => {
    markCancelled = resolve;
  });
  signal.addEventListener('abort', () => markCancelled(), { once: true });
  const response = new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of events) controller.enqueue(typeof event === 'string' ? encoder.encode(event) : event);
      },
      cancel() {
        markCancelled();
      },
    }),
    { headers: { 'content-type': 'text/event-stream' } },
  );
  return { response, cancelled };
}

export function openAiSse(chunks: unknown[], done = true): string[] {
  return [...chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`), ...(done ? ['data: [DONE]\n\n'] : [])];
}

export function openAiCompletion(content: string, usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }) {
  return {
    id: 'chatcmpl-upstream-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
    usage,
    system_fingerprint: 'fp_test',
  };
}

export function openAiChunk(delta: Record<string, unknown>, finishReason: string | null = null, usage?: Record<string, number>) {
  return {
    id: 'chatcmpl-upstream-1',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'gpt-4o-mini-2024-07-18',
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  };
}
