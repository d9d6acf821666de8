/**
 * Streams an upstream's chunks to the client as SSE as they arrive, while counting what was
 * delivered. When the upstream ends, the call is settled and its `faucet` object sent as the last
 * event before `[DONE]`.
 *
 * Once the upstream has accepted the call the provider bills it, so the call is always booked:
 * - the client goes away: the upstream is read on (not forwarded) for up to `drainMs` to get the
 *   provider's own usage count, then stopped; without that count the booking uses upper bounds;
 * - the call reaches its deadline: the upstream is stopped and the call booked the same way;
 * - the upstream fails mid-stream: what was delivered is booked (nothing delivered, or a buffered
 *   answer the client never got: released, as the provider bills no failed generation) and the
 *   stream ends with an error event;
 * - a call held for a quota (docs/quota.md, quota-meter.ts) whose next step is refused: the upstream is
 *   stopped at once, the answer ends with `finish_reason: "length"` and the `faucet` object says why
 *   (`cut_reason`); without the provider's count it is booked at the input bound and the output seen plus a step.
 */
import { databaseUnavailable, isDatabaseUnreachable } from '#shared/database-unreachable.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletionChunk, ChatUsage } from '../openai/chat-schemas.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import { meteredUsage, type MeteredUsage } from '../metering/metered-usage.ts';
import { type QuotaCutReason, QuotaMeter, type QuotaOptions } from './quota-meter.ts';
import { formatSseDone, formatSseJson } from '#shared/wire/format-sse.ts';

export interface MeteredStreamOptions {
  chunks: AsyncIterable<ChatCompletionChunk>;
  /** Forward the upstream's usage chunk only when the client asked for it (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** Upper bounds of what the provider can bill (the hold's worst case), used when it reports no usage. */
  bounds: { inputTokens: number; outputTokens: number };
  requestId: string;
  /** Milliseconds from now until the call's deadline: the stream is cut and billed there. */
  deadlineMs: number;
  /** How long to keep reading the upstream for its usage after the client went away. */
  drainMs: number;
  /** `ending`: how the stream ended (the request log's outcome); `failure` when the upstream failed mid-stream. */
  settle(usage: MeteredUsage, ending: StreamEnding, failure?: unknown): Promise<FaucetObject>;
  /** Nothing was delivered and the upstream failed: release, charge nothing. */
  abandon(failure: unknown): Promise<void>;
  /** Stops the upstream exchange. */
  stopUpstream(): void;
  /** Keeps the isolate alive for work that outlives the response (settling after a client abort). */
  defer(work: Promise<unknown>): void;
  onSettleFailure(error: unknown): void;
  /** The call is held for a quota that grows with the answer (absent: for its worst case). */
  quota?: QuotaOptions;
  /**
   * The client gets the answer whole once it ends (a call not streamed, buffered): an upstream that
   * fails mid-way delivered the client nothing, so the call is released, as a failed completion is;
   * one that timed out may still be generating, so what it sent is booked, as for a stream.
   */
  buffered?: boolean;
}

/** `completed`: the upstream ended by itself; `cut`: the client left or the deadline came; `failed`: the upstream broke mid-stream. */
export type StreamEnding = 'completed' | 'cut' | 'failed';

const encoder = new TextEncoder();

export function meteredStream(options: MeteredStreamOptions): ReadableStream<Uint8Array> {
  const iterator = options.chunks[Symbol.asyncIterator]();
  let reported: ChatUsage | null = null;
  /**
   * Whether `reported` is the whole count: a usage-only chunk, or usage on a chunk that ends its
   * choice. Some upstreams repeat a running count on content chunks; a stream cut after one is not
   * billed at that count (the provider went on generating), and the drain reads on for the whole one.
   */
  let reportedWhole = false;
  /** UTF-8 bytes of the output text seen: a byte-level BPE token is at least one byte, so an upper bound of its tokens. */
  let outputBytes = 0;
  let upstreamEnded = false;
  let finished = false;
  /** Set when a quota step was refused and the upstream stopped: the answer ends at the next read. */
  let quotaCut: QuotaCutReason | null = null;
  /** The last chunk's id, model and time, and the choices not yet finished: a cut answer's last chunk finishes them. */
  let lastChunk: ChatCompletionChunk | null = null;
  const openChoices = new Set<number>();
  const meter =
    options.quota === undefined
      ? null
      : new QuotaMeter(options.quota, (reason) => {
          if (quotaCut !== null || finished) return;
          quotaCut = reason;
          options.stopUpstream();
        });

  const observe = (chunk: ChatCompletionChunk) => {
    if (chunk.usage != null) {
      reported = chunk.usage;
      if (chunk.choices.length === 0 || chunk.choices.some((choice) => choice.finish_reason != null)) reportedWhole = true;
    }
    lastChunk = chunk;
    for (const choice of chunk.choices) {
      if (choice.finish_reason == null) openChoices.add(choice.index);
      else openChoices.delete(choice.index);
      outputBytes += bytes(choice.delta.content) + bytes(choice.delta.refusal) + bytes(choice.delta.reasoning_content);
      if (choice.delta.thinking_blocks != null) outputBytes += bytes(JSON.stringify(choice.delta.thinking_blocks));
      for (const call of choice.delta.tool_calls ?? []) outputBytes += bytes(call.function?.name) + bytes(call.function?.arguments);
    }
    meter?.observe(outputBytes);
  };

  /**
   * The provider's count when it gave one. Otherwise upper bounds: input at the hold's bound; output
   * at the bytes seen when the upstream ended by itself (all it produced passed through here); when
   * Faucet cut it (the provider may have produced more than was seen), at the hold's bound, or for a
   * call held for a quota at the bytes seen plus a step (QuotaMeter.billedOutput).
   */
  const usageSoFar = (): MeteredUsage =>
    meteredUsage(upstreamEnded || reportedWhole ? reported : null, () => ({
      inputTokens: options.bounds.inputTokens,
      outputTokens: upstreamEnded
        ? Math.min(outputBytes, options.quota?.worst ?? options.bounds.outputTokens)
        : (meter?.billedOutput() ?? options.bounds.outputTokens),
    }));

  /** Settling must finish even if the client disconnects while it runs. */
  const settle = (usage: MeteredUsage, ending: StreamEnding, failure?: unknown): Promise<FaucetObject> => {
    const settling = options.settle(usage, ending, failure);
    options.defer(settling.catch(() => undefined));
    return settling;
  };

  /** Reads on (discarding) until the provider's usage arrives, the upstream ends, or `limitMs` passes. */
  const drain = async (limitMs: number): Promise<void> => {
    const stop = Symbol('stop');
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeUp = new Promise<typeof stop>((resolve) => {
      timer = setTimeout(() => resolve(stop), limitMs);
    });
    try {
      while (!reportedWhole && !upstreamEnded) {
        // Read on only within the quota held: a refused step stops the upstream here too.
        if (meter !== null && (quotaCut !== null || (await meter.admit()) !== null)) return;
        const step = await Promise.race([iterator.next(), timeUp]);
        if (step === stop) return;
        if (step.done) upstreamEnded = true;
        else observe(step.value);
      }
    } catch {
      upstreamEnded = true;
    } finally {
      clearTimeout(timer);
      options.stopUpstream();
      iterator.return?.().catch(() => undefined);
    }
  };

  /** The client left or the deadline came: book what the provider bills, from its own count if it can still be had. */
  const cutAndSettle = (drainMs: number) => {
    finished = true;
    clearTimeout(deadline);
    const work = drain(drainMs).then(() => settle(usageSoFar(), 'cut'));
    options.defer(work.catch((error: unknown) => options.onSettleFailure(error)));
    return work;
  };

  let streamController: ReadableStreamDefaultController<Uint8Array> | undefined;
  const deadline = setTimeout(() => {
    if (finished) return;
    const controller = streamController;
    void cutAndSettle(0).then(
      (faucet) => {
        controller?.enqueue(formatSseJson(faucetEvent(faucet)));
        controller?.enqueue(
          formatSseJson(
            errorEvent(
              new FaucetError('upstream_timeout', 'The call reached its longest allowed duration and was ended.'),
              options.requestId,
            ),
          ),
        );
        controller?.close();
      },
      () => controller?.close(),
    );
  }, options.deadlineMs);

  return new ReadableStream<Uint8Array>({
    start(controller) {
      streamController = controller;
    },
    // Loops until it has enqueued something: a pull that returns empty-handed may not be called again.
    async pull(controller) {
      while (!finished) {
        if (meter !== null && quotaCut === null) {
          const reason = await meter.admit();
          if (finished) return;
          if (reason !== null && quotaCut === null) {
            quotaCut = reason;
            options.stopUpstream();
          }
        }
        if (quotaCut !== null) {
          await endForQuota(controller, quotaCut);
          return;
        }
        let step: IteratorResult<ChatCompletionChunk>;
        try {
          step = await iterator.next();
        } catch (error) {
          if (finished) return;
          if (quotaCut !== null) {
            // The upstream was stopped because a step was refused: the answer ends, not fails.
            await endForQuota(controller, quotaCut);
            return;
          }
          finished = true;
          clearTimeout(deadline);
          await endWithFailure(controller, error);
          return;
        }
        if (finished) {
          // Cut meanwhile (client gone, deadline): count the chunk for the booking, send nothing.
          if (!step.done) observe(step.value);
          return;
        }
        if (!step.done) {
          const chunk = step.value;
          observe(chunk);
          const usageOnly = chunk.usage != null && chunk.choices.length === 0;
          if (usageOnly && !options.includeUsage) continue;
          controller.enqueue(formatSseJson(options.includeUsage ? chunk : withoutUsage(chunk)));
          return;
        }
        finished = true;
        upstreamEnded = true;
        clearTimeout(deadline);
        try {
          const faucet = await settle(usageSoFar(), 'completed');
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
      void cutAndSettle(options.drainMs);
    },
  });

  async function endForQuota(controller: ReadableStreamDefaultController<Uint8Array>, reason: QuotaCutReason): Promise<void> {
    finished = true;
    clearTimeout(deadline);
    iterator.return?.().catch(() => undefined);
    // Each choice still open ends as a provider's answer ends at its max tokens.
    const last = lastChunk as ChatCompletionChunk | null;
    if (last !== null && openChoices.size > 0) {
      const { id, created, model } = last;
      const choices = [...openChoices].map((index) => ({ index, delta: {}, finish_reason: 'length' as const }));
      controller.enqueue(formatSseJson({ id, object: 'chat.completion.chunk', created, model, choices }));
    }
    try {
      const faucet = await settle(usageSoFar(), 'cut');
      controller.enqueue(formatSseJson(faucetEvent({ ...faucet, cut_reason: reason })));
      controller.enqueue(formatSseDone());
    } catch (error) {
      options.onSettleFailure(error);
      controller.enqueue(formatSseJson(errorEvent(error, options.requestId)));
    }
    controller.close();
  }

  async function endWithFailure(controller: ReadableStreamDefaultController<Uint8Array>, error: unknown): Promise<void> {
    upstreamEnded = true;
    try {
      // A buffered answer's client got nothing, unless the provider may still be generating (a timeout).
      const delivered = options.buffered !== true || (FaucetError.isInstance(error) && error.code === 'upstream_timeout');
      if (delivered && (outputBytes > 0 || reported !== null)) {
        controller.enqueue(formatSseJson(faucetEvent(await settle(usageSoFar(), 'failed', error))));
      } else {
        const abandoning = options.abandon(error);
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

function bytes(text: string | null | undefined): number {
  return text == null || text === '' ? 0 : encoder.encode(text).byteLength;
}

/** Shaped like a chunk with no choices, so OpenAI-compatible clients that validate chunks accept it. */
function faucetEvent(faucet: FaucetObject) {
  return {
    id: faucet.request_id,
    object: 'faucet.usage',
    created: Math.floor(Date.now() / 1000),
    model: `${faucet.provider}:${faucet.model}`,
    choices: [],
    faucet,
  };
}

function errorEvent(error: unknown, requestId: string) {
  // A settlement that could not reach the database says so; anything else unknown ended the upstream's stream.
  const failure = FaucetError.isInstance(error)
    ? error
    : isDatabaseUnreachable(error)
      ? databaseUnavailable()
      : new FaucetError('upstream_error', 'The upstream stream failed.');
  return { error: { code: failure.code, message: failure.message, request_id: requestId } };
}

/** Some upstreams repeat `usage` on content chunks; a client that did not ask for usage gets none. */
function withoutUsage(chunk: ChatCompletionChunk): ChatCompletionChunk {
  if (chunk.usage == null) return chunk;
  const { usage: _usage, ...rest } = chunk;
  return rest as ChatCompletionChunk;
}
