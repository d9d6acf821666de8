/**
 * Puts the Responses translator after the metered stream: reads the metered stream's SSE (chat
 * chunks, its `faucet.usage` event, then `[DONE]` or an error envelope) and sends Responses SSE. The
 * metered stream still counts and settles the chat chunks; a client that goes away cancels the
 * metered stream through this one, so the call is still drained and booked there. A call answered
 * natively (its chunks carry the upstream's Responses events) is relayed, not translated
 * (native-responses-relay.ts).
 */
import type { ErrorCode } from '#shared/wire/errors.ts';
import { formatSseEvent } from '#shared/wire/format-sse.ts';
import { SseDecoder } from '#shared/wire/sse.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import { chatCompletionChunkSchema } from '../../openai/chat-schemas.ts';
import { NativeResponsesRelay } from './native-responses-relay.ts';
import type { ResponsesStreamEvent, ResponsesStreamTranslator, StreamFailure } from './responses-stream.ts';

type SentEvent = { type: string; sequence_number?: number };

/**
 * The metered stream's SSE (chat chunks, its `faucet.usage` event, `[DONE]` or an error envelope) as
 * Responses SSE: `event: <type>` lines, the `faucet` object on the final response, no `[DONE]` (the
 * Responses API ends with its last event). Cancelling this stream cancels the metered one.
 */
export function responsesEventStream(
  meteredSse: ReadableStream<Uint8Array>,
  translator: ResponsesStreamTranslator,
): ReadableStream<Uint8Array> {
  const reader = meteredSse.getReader();
  const decoder = new TextDecoder();
  const sse = new SseDecoder();
  let faucet: FaucetObject | undefined;
  /** Set by the first chunk that carries an upstream Responses event. */
  let relay: NativeResponsesRelay | null = null;
  let started = false;
  let ended = false;
  /** A translated stream opens with the translator's `response.created` and `.in_progress`; a relayed one with the upstream's. */
  const begin = (native: boolean): ResponsesStreamEvent[] => {
    if (started) return [];
    started = true;
    if (native) relay = new NativeResponsesRelay();
    return native ? [] : translator.start();
  };
  const finish = (): SentEvent[] => (relay === null ? [...begin(false), ...translator.finish(faucet)] : relay.finish(faucet));
  const fail = (failure: StreamFailure): SentEvent[] =>
    relay === null ? [...begin(false), ...translator.fail(failure, faucet)] : relay.fail(failure, faucet);

  /** One event of the metered stream: what to send for it, and whether it ended the stream. */
  const translate = (data: string): SentEvent[] => {
    if (data === '[DONE]') {
      ended = true;
      return finish();
    }
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      ended = true;
      return fail(upstreamFailure('The stream sent an event that is not JSON.'));
    }
    const fields = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
    if (fields.object === 'faucet.usage') {
      faucet = fields.faucet as FaucetObject;
      return [];
    }
    if (typeof fields.error === 'object' && fields.error !== null) {
      ended = true;
      const error = fields.error as Partial<StreamFailure>;
      return fail({
        code: error.code ?? 'upstream_error',
        message: error.message ?? 'The upstream stream failed.',
        request_id: error.request_id,
      });
    }
    const upstreamEvent = fields.responses_event as SentEvent | undefined;
    const opening = begin(upstreamEvent !== undefined);
    if (relay !== null) return upstreamEvent === undefined ? [] : (relay as NativeResponsesRelay).push(upstreamEvent);
    const chunk = chatCompletionChunkSchema.safeParse(value);
    if (!chunk.success) {
      ended = true;
      return [...opening, ...fail(upstreamFailure('The stream sent a chunk that is not a chat completion chunk.'))];
    }
    return [...opening, ...translator.push(chunk.data)];
  };

  return new ReadableStream<Uint8Array>({
    // Loops until it has enqueued something: a pull that returns empty-handed may not be called again.
    async pull(controller) {
      while (!ended) {
        let step: ReadableStreamReadResult<Uint8Array>;
        try {
          step = await reader.read();
        } catch {
          step = { done: true, value: undefined };
        }
        const events: SentEvent[] = [];
        if (step.done) {
          // Closed without `[DONE]` or an error envelope: the metered stream always ends with one of them.
          ended = true;
          events.push(...fail(upstreamFailure('The upstream stream ended early.')));
        } else {
          for (const { event } of sse.push(decoder.decode(step.value, { stream: true }))) {
            if (!ended) events.push(...translate(event.data));
          }
        }
        for (const event of events) controller.enqueue(formatSseEvent(event.type, event));
        if (ended) {
          reader.releaseLock();
          controller.close();
          return;
        }
        if (events.length > 0) return;
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

function upstreamFailure(message: string): StreamFailure {
  const code: ErrorCode = 'upstream_error';
  return { code, message };
}
