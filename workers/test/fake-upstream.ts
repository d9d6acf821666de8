/**
 * Upstreams played in-process: a FetchFunction that records what the gateway sent and answers from
 * a script, so provider and gateway tests never touch the network. A script's whole answer to a
 * request for a stream is sent as that protocol's stream, as a provider streams when asked: the
 * gateway streams every call it holds for a quota, also one the client did not ask to stream. A
 * script written in chat terms answers OpenAI's Responses API (`…/responses`, where the Responses
 * surface goes natively) in that API's words, by the gateway's own Responses translation.
 */
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { formatSseEvent } from '#shared/wire/format-sse.ts';
import { SseDecoder } from '#shared/wire/sse.ts';
import type { ChatCompletion, ChatCompletionChunk } from '../gateway/src/openai/chat-schemas.ts';
import type { ResponsesRequest } from '../gateway/src/surfaces/responses/responses-request.ts';
import { responseOfChatCompletion } from '../gateway/src/surfaces/responses/responses-response.ts';
import { ResponsesStreamTranslator } from '../gateway/src/surfaces/responses/responses-stream.ts';

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
      const answered = await honoringStream(recorded, await answer(recorded, request.signal));
      return /\/responses(\?|$)/.test(recorded.url) ? inResponsesTerms(recorded, answered) : answered;
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

/**
 * A whole answer (OpenAI's chat completion, Anthropic's message, Gemini's response) scripted for a
 * request that asked for a stream, sent as its protocol's stream: the same content and usage. Errors,
 * streams and anything else are sent as scripted.
 */
async function honoringStream(request: RecordedRequest, response: Response): Promise<Response> {
  const body = (request.body ?? {}) as { stream?: unknown; stream_options?: { include_usage?: unknown } };
  const gemini = request.url.includes(':streamGenerateContent');
  const json = response.headers.get('content-type')?.includes('application/json') === true;
  if ((body.stream !== true && !gemini) || response.status !== 200 || !json) return response;
  const answer = (await response.clone().json()) as Record<string, unknown>;
  if (answer.object === 'chat.completion')
    return sseResponse(openAiSse(chunksOfCompletion(answer, body.stream_options?.include_usage === true)));
  if (answer.type === 'message') return sseResponse(anthropicEventsOf(answer));
  if (gemini && Array.isArray(answer.candidates)) return sseResponse([`data: ${JSON.stringify(answer)}\n\n`]);
  return response;
}

interface WholeChoice {
  index: number;
  message: { tool_calls?: Array<Record<string, unknown>> } & Record<string, unknown>;
  finish_reason: string | null;
}

/** A chat completion as OpenAI streams it: the message in one delta, then the finish, then the usage (alone when asked). */
function chunksOfCompletion(completion: Record<string, unknown>, usageAlone: boolean): unknown[] {
  const { choices, usage, object: _object, ...head } = completion as { choices: WholeChoice[]; usage?: unknown; object: string };
  const chunk = (fields: Record<string, unknown>) => ({ ...head, object: 'chat.completion.chunk', ...fields });
  const deltas = choices.map(({ index, message }) => {
    const { tool_calls: toolCalls, ...rest } = message;
    const delta =
      toolCalls === undefined ? rest : { ...rest, tool_calls: toolCalls.map((call, position) => ({ index: position, ...call })) };
    return { index, delta, finish_reason: null };
  });
  const finishes = choices.map(({ index, finish_reason }) => ({ index, delta: {}, finish_reason }));
  if (usage == null) return [chunk({ choices: deltas }), chunk({ choices: finishes })];
  if (!usageAlone) return [chunk({ choices: deltas }), chunk({ choices: finishes, usage })];
  return [chunk({ choices: deltas }), chunk({ choices: finishes }), chunk({ choices: [], usage })];
}

/** An Anthropic message as Anthropic streams it: each content block whole in one delta, the usage on the first and last events. */
function anthropicEventsOf(message: Record<string, unknown>): string[] {
  const {
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage,
    ...head
  } = message as {
    content: Array<Record<string, unknown>>;
    stop_reason: string | null;
    stop_sequence?: string | null;
    usage?: unknown;
  };
  const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const events = [event('message_start', { message: { ...head, content: [], stop_reason: null, stop_sequence: null, usage } })];
  content.forEach((block, index) => {
    const delta = (value: Record<string, unknown>) => event('content_block_delta', { index, delta: value });
    if (block.type === 'text') {
      events.push(
        event('content_block_start', { index, content_block: { type: 'text', text: '' } }),
        delta({ type: 'text_delta', text: block.text }),
      );
    } else if (block.type === 'tool_use') {
      events.push(
        event('content_block_start', { index, content_block: { ...block, input: {} } }),
        delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input ?? {}) }),
      );
    } else if (block.type === 'thinking') {
      events.push(
        event('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } }),
        delta({ type: 'thinking_delta', thinking: block.thinking }),
        delta({ type: 'signature_delta', signature: block.signature }),
      );
    } else {
      events.push(event('content_block_start', { index, content_block: block }));
    }
    events.push(event('content_block_stop', { index }));
  });
  events.push(
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: stopSequence ?? null }, usage }),
    event('message_stop', {}),
  );
  return events;
}

/**
 * A chat answer scripted for a request to the Responses API, in that API's words: a whole completion
 * as a response object, a chat stream as Responses events (cancelling it cancels the script's stream,
 * so a test sees the gateway stop reading). Errors and answers already in Responses terms pass as they are.
 */
async function inResponsesTerms(request: RecordedRequest, response: Response): Promise<Response> {
  const body = request.body as ResponsesRequest;
  const ids = { callId: crypto.randomUUID(), createdAt: 1_700_000_000 };
  const type = response.headers.get('content-type') ?? '';
  if (response.status !== 200) return response;
  if (type.includes('application/json')) {
    const answer = (await response.clone().json()) as ChatCompletion;
    if (answer.object !== 'chat.completion') return response;
    return new Response(JSON.stringify(responseOfChatCompletion(answer, body, ids)), { headers: { 'content-type': 'application/json' } });
  }
  if (!type.includes('text/event-stream') || response.body === null) return response;
  const translator = new ResponsesStreamTranslator(body, ids);
  const reader = response.body.getReader();
  const sse = new SseDecoder();
  const text = new TextDecoder();
  /** Decided by the first bytes: a script already in Responses events passes as it is. */
  let mode: 'translate' | 'pass' | undefined;
  const events = new ReadableStream<Uint8Array>({
    // Loops until it has enqueued something: a pull that returns empty-handed may not be called again.
    async pull(controller) {
      let sent = false;
      const send = (list: Array<{ type: string }>) => {
        for (const event of list) controller.enqueue(formatSseEvent(event.type, event));
        if (list.length > 0) sent = true;
      };
      while (!sent) {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        if (mode === undefined) {
          mode = /"type":"response\./.test(text.decode(value, { stream: false })) ? 'pass' : 'translate';
          if (mode === 'translate') send(translator.start());
        }
        if (mode === 'pass') {
          controller.enqueue(value);
          return;
        }
        for (const { event, raw } of sse.push(text.decode(value, { stream: true }))) {
          if (event.data === '[DONE]') {
            send(translator.finish());
            continue;
          }
          let chunk: ChatCompletionChunk;
          try {
            chunk = JSON.parse(event.data) as ChatCompletionChunk;
          } catch {
            controller.enqueue(new TextEncoder().encode(raw));
            sent = true;
            continue;
          }
          send(translator.push(chunk));
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(events, { headers: { 'content-type': 'text/event-stream' } });
}
