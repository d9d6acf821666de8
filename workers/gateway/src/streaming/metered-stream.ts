/**
 * Streams an upstream's chunks to the client as SSE as they arrive, while counting what was
 * delivered. When the upstream ends, the call is settled and its `faucet` object sent as the last
 * event before `[DONE]`. When the client goes away, the upstream is stopped and the call settled
 * on the tokens already streamed. A failure mid-stream settles what was delivered (nothing
 * delivered: the hold is released) and ends with an error event.
 */
import { FaucetError } from '../../../shared/errors.ts';
import type { ChatCompletionChunk, ChatUsage } from '../openai/chat-schemas.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import type { MeteredUsage } from '../metering/metered-usage.ts';
import { formatSseDone, formatSseJson } from '../sse/format-sse.ts';
import { countTokens } from '../tokens/tokenize.ts';

export interface MeteredStreamOptions {
  chunks: AsyncIterable<ChatCompletionChunk>;
  /** Forward the upstream's usage chunk only when the client asked for it (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** Faucet's count of the prompt, used when the upstream reports no usage. */
  estimatedInputTokens: number;
  requestId: string;
  settle(usage: MeteredUsage): Promise<FaucetObject>;
  /** Nothing was delivered and the upstream failed: release, charge nothing. */
  abandon(): Promise<void>;
  /** Stops the upstream exchange (client went away). */
  stopUpstream(): void;
  /** Keeps the isolate alive for work that outlives the response (settling after a client abort). */
  defer(work: Promise<unknown>): void;
  onSettleFailure(error: unknown): void;
}

export function meteredStream(options: MeteredStreamOptions): ReadableStream<Uint8Array> {
  const iterator = options.chunks[Symbol.asyncIterator]();
  let reported: ChatUsage | null = null;
  let streamedText = '';
  let finished = false;

  const usageSoFar = (): MeteredUsage => {
    if (reported !== null) {
      const cached = reported.prompt_tokens_details?.cached_tokens ?? 0;
      return { inputTokens: reported.prompt_tokens, outputTokens: reported.completion_tokens, cachedInputTokens: Math.min(cached, reported.prompt_tokens), estimated: false };
    }
    return { inputTokens: options.estimatedInputTokens, outputTokens: countTokens(streamedText), cachedInputTokens: 0, estimated: true };
  };

  const observe = (chunk: ChatCompletionChunk) => {
    if (chunk.usage != null) reported = chunk.usage;
    for (const choice of chunk.choices) {
      streamedText += choice.delta.content ?? '';
      streamedText += choice.delta.refusal ?? '';
      for (const call of choice.delta.tool_calls ?? []) streamedText += (call.function?.name ?? '') + (call.function?.arguments ?? '');
    }
  };

  /** Settling must finish even if the client disconnects while it runs. */
  const settle = (usage: MeteredUsage): Promise<FaucetObject> => {
    const settling = options.settle(usage);
    options.defer(settling.catch(() => undefined));
    return settling;
  };

  return new ReadableStream<Uint8Array>({
    // Loops until it has enqueued something: a pull that returns empty-handed may not be called again.
    async pull(controller) {
      while (!finished) {
        let step: IteratorResult<ChatCompletionChunk>;
        try {
          step = await iterator.next();
        } catch (error) {
          if (finished) return;
          finished = true;
          await endWithFailure(controller, error);
          return;
        }
        if (finished) return;
        if (!step.done) {
          const chunk = step.value;
          observe(chunk);
          const usageOnly = chunk.usage != null && chunk.choices.length === 0;
          if (usageOnly && !options.includeUsage) continue;
          controller.enqueue(formatSseJson(options.includeUsage ? chunk : withoutUsage(chunk)));
          return;
        }
        finished = true;
        try {
          const faucet = await settle(usageSoFar());
          controller.enqueue(formatSseJson(faucetEvent(faucet)));
          controller.enqueue(formatSseDone());
        } catch (error) {
          options.onSettleFailure(error);
          controller.enqueue(formatSseJson(errorEvent(error, options.requestId)));
        }
        controller.close();
      }
    },

    cancel() {
      if (finished) return;
      finished = true;
      options.stopUpstream();
      iterator.return?.().catch(() => undefined);
      const usage = usageSoFar();
      options.defer(
        (usage.outputTokens > 0 || reported !== null ? settle(usage) : options.abandon()).catch((error: unknown) => options.onSettleFailure(error)),
      );
    },
  });

  async function endWithFailure(controller: ReadableStreamDefaultController<Uint8Array>, error: unknown): Promise<void> {
    const usage = usageSoFar();
    try {
      if (usage.outputTokens > 0) {
        controller.enqueue(formatSseJson(faucetEvent(await settle(usage))));
      } else {
        const abandoning = options.abandon();
        options.defer(abandoning.catch(() => undefined));
        await abandoning;
      }
    } catch (settleError) {
      options.onSettleFailure(settleError);
    }
    controller.enqueue(formatSseJson(errorEvent(error, options.requestId)));
    controller.close();
  }
}

/** Shaped like a chunk with no choices, so OpenAI-compatible clients that validate chunks accept it. */
function faucetEvent(faucet: FaucetObject) {
  return { id: faucet.request_id, object: 'faucet.usage', created: Math.floor(Date.now() / 1000), model: `${faucet.provider}:${faucet.model}`, choices: [], faucet };
}

function errorEvent(error: unknown, requestId: string) {
  const failure = FaucetError.isInstance(error) ? error : new FaucetError('upstream_error', 'The upstream stream failed.');
  return { error: { code: failure.code, message: failure.message, request_id: requestId } };
}

/** Some upstreams repeat `usage` on content chunks; a client that did not ask for usage gets none. */
function withoutUsage(chunk: ChatCompletionChunk): ChatCompletionChunk {
  if (chunk.usage == null) return chunk;
  const { usage: _usage, ...rest } = chunk;
  return rest as ChatCompletionChunk;
}
