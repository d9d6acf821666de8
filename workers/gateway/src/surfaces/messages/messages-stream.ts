/**
 * The gateway's metered chat stream → Anthropic's streaming events. It sits after
 * `streaming/metered-stream.ts` and only reshapes what the client sees: metering, settling and the
 * client-gone booking stay there (a client's cancel reaches the metered stream through this one).
 *
 * The metered stream sends chat chunks, then the `faucet` event once the call is settled, then
 * `[DONE]`; or an `error` event (after a `faucet` event when something was delivered). So
 * `message_delta` (stop reason, final usage, the `faucet` object) and `message_stop` go out at
 * `[DONE]`, when the usage is whole and the call booked; an `error` event ends the stream instead.
 */
import { type ErrorCode, errorStatus, FaucetError } from '#shared/wire/errors.ts';
import { SseDecoder } from '#shared/wire/sse.ts';
import type { ChatCompletionChunk, ChatUsage } from '../../openai/chat-schemas.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import { messagesErrorBody } from './messages-errors.ts';
import {
  type MessageIds,
  type MessagesUsage,
  type StopReason,
  messageIdOf,
  messagesUsageOrBooked,
  reasoningTextOf,
  stopReasonOf,
} from './messages-response.ts';

export type MessagesStreamEvent =
  | { type: 'message_start'; message: Record<string, unknown> & { usage: MessagesUsage } }
  | { type: 'ping' }
  | { type: 'content_block_start'; index: number; content_block: Record<string, unknown> & { type: string } }
  | {
      type: 'content_block_delta';
      index: number;
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'signature_delta'; signature: string }
        | { type: 'input_json_delta'; partial_json: string };
    }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason: StopReason | null; stop_sequence: null };
      usage: MessagesUsage;
      faucet?: FaucetObject;
    }
  | { type: 'message_stop' }
  | (ReturnType<typeof messagesErrorBody> & { faucet?: FaucetObject });

type OpenBlock = { kind: 'text' | 'thinking'; index: number } | { kind: 'tool_use'; index: number; toolIndex: number };

export interface MessagesStreamOptions {
  /** The model named in `message_start` when no chunk names the upstream's. */
  model?: string;
  /** The gateway's own count of the prompt (the hold's), reported in `message_start` until `message_delta` gives the provider's. */
  promptTokens?: number;
}

/** One message's translation state: feed it what the metered stream sends, in order. */
export class MessagesStreamTranslator {
  private started = false;
  private finished = false;
  private nextIndex = 0;
  private open: OpenBlock | undefined;
  private readonly toolBlocks = new Map<number, number>();
  private finishReason: string | null = null;
  private usage: ChatUsage | null = null;
  private faucetObject: FaucetObject | undefined;

  constructor(
    private readonly ids: MessageIds,
    private readonly options: MessagesStreamOptions = {},
  ) {}

  /** Between message_start and the end: when a keep-alive `ping` may be sent. */
  get ongoing(): boolean {
    return this.started && !this.finished;
  }

  chunk(chunk: ChatCompletionChunk): MessagesStreamEvent[] {
    if (this.finished) return [];
    const events = this.start(chunk.model);
    if (chunk.usage != null) this.usage = chunk.usage;
    const choice = chunk.choices.find((candidate) => candidate.index === 0);
    if (choice === undefined) return events;
    const delta = choice.delta;
    const thinking = reasoningTextOf(delta);
    if (thinking !== '') {
      events.push(...this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' }));
      events.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'thinking_delta', thinking } });
    }
    for (const block of delta.thinking_blocks ?? []) events.push(...this.thinkingBlock(block));
    const text = (delta.content ?? '') + (delta.refusal ?? '');
    if (text !== '') {
      events.push(...this.openBlock('text', { type: 'text', text: '' }));
      events.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'text_delta', text } });
    }
    for (const call of delta.tool_calls ?? []) {
      let index = this.toolBlocks.get(call.index);
      if (index === undefined) {
        events.push(...this.closeBlock());
        index = this.nextIndex++;
        this.toolBlocks.set(call.index, index);
        this.open = { kind: 'tool_use', index, toolIndex: call.index };
        const id = call.id ?? `toolu_${this.ids.callId}_${call.index}`;
        events.push({
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id, name: call.function?.name ?? '', input: {} },
        });
      }
      // Upstreams send one call's arguments after another; a late piece still names its own block.
      const arguments_ = call.function?.arguments ?? '';
      if (arguments_ !== '')
        events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: arguments_ } });
    }
    if (choice.finish_reason != null) {
      this.finishReason = choice.finish_reason;
      events.push(...this.closeBlock());
    }
    return events;
  }

  /**
   * Anthropic's thinking as its adapter streams it: a signature closes the thinking block it signs
   * (a block of its own when none is open), a redacted block is whole in one piece.
   */
  private thinkingBlock(block: Record<string, unknown> & { type: string }): MessagesStreamEvent[] {
    if (block.type === 'redacted_thinking') {
      const events = this.closeBlock();
      const index = this.nextIndex++;
      events.push({ type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: String(block.data ?? '') } });
      events.push({ type: 'content_block_stop', index });
      return events;
    }
    if (block.type !== 'thinking' || typeof block.signature !== 'string' || block.signature === '') return [];
    const events = this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
    events.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'signature_delta', signature: block.signature } });
    events.push(...this.closeBlock());
    return events;
  }

  /** The settled call's `faucet` object: it travels in `message_delta` (or in the error event). */
  faucet(faucet: FaucetObject): void {
    this.faucetObject = faucet;
  }

  done(): MessagesStreamEvent[] {
    if (this.finished) return [];
    const events = [...this.start(''), ...this.closeBlock()];
    this.finished = true;
    events.push({
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(this.finishReason, this.toolBlocks.size > 0) ?? 'end_turn', stop_sequence: null },
      usage: messagesUsageOrBooked(this.usage, this.faucetObject),
      ...(this.faucetObject === undefined ? {} : { faucet: this.faucetObject }),
    });
    events.push({ type: 'message_stop' });
    return events;
  }

  /** A failure the metered stream reported (Faucet's envelope): Anthropic's `error` event, which ends the stream. */
  error(code: string, message: string, requestId: string): MessagesStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    const known = Object.hasOwn(errorStatus, code) ? (code as ErrorCode) : 'upstream_error';
    const body = messagesErrorBody(new FaucetError(known, message), requestId);
    return [this.faucetObject === undefined ? body : { ...body, faucet: this.faucetObject }];
  }

  /** The metered stream closed: a message it never finished ends in an error. */
  end(requestId: string): MessagesStreamEvent[] {
    return this.error('upstream_error', 'The stream ended before the message was complete.', requestId);
  }

  private start(model: string): MessagesStreamEvent[] {
    if (this.started) return [];
    this.started = true;
    const message = {
      id: messageIdOf(this.ids),
      type: 'message',
      role: 'assistant',
      model: model === '' ? (this.options.model ?? '') : model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // Chat streams report usage only at the end; message_delta carries the provider's whole count.
      usage: { input_tokens: this.options.promptTokens ?? 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
    return [{ type: 'message_start', message }, { type: 'ping' }];
  }

  private openBlock(kind: 'text' | 'thinking', contentBlock: { type: string } & Record<string, unknown>): MessagesStreamEvent[] {
    if (this.open?.kind === kind) return [];
    const events = this.closeBlock();
    this.open = { kind, index: this.nextIndex++ };
    events.push({ type: 'content_block_start', index: this.open.index, content_block: contentBlock });
    return events;
  }

  private closeBlock(): MessagesStreamEvent[] {
    if (this.open === undefined) return [];
    const index = this.open.index;
    this.open = undefined;
    return [{ type: 'content_block_stop', index }];
  }
}

const encoder = new TextEncoder();

/** One event as Anthropic writes it: its type as the SSE event name, the event as JSON data. */
export function formatMessagesEvent(event: MessagesStreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Reshapes the metered stream's bytes (OpenAI SSE) into Anthropic's. The metered stream must forward
 * usage chunks (`includeUsage: true`), or message_delta falls back to the booked counts. While the
 * upstream is silent (a model thinking without showing it), a `ping`
 * every `pingIntervalMs` keeps clients and proxies from timing the stream out, as Anthropic's do.
 */
export function messagesEventStream(
  metered: ReadableStream<Uint8Array>,
  options: MessageIds & MessagesStreamOptions & { requestId: string; pingIntervalMs?: number },
): ReadableStream<Uint8Array> {
  const translator = new MessagesStreamTranslator({ callId: options.callId }, options);
  const reader = metered.getReader();
  const decoder = new TextDecoder();
  const sse = new SseDecoder();
  let pinger: ReturnType<typeof setInterval> | undefined;
  const bytesOf = (events: MessagesStreamEvent[]) => encoder.encode(events.map(formatMessagesEvent).join(''));
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (options.pingIntervalMs === undefined) return;
      pinger = setInterval(() => {
        if (translator.ongoing) controller.enqueue(bytesOf([{ type: 'ping' }]));
      }, options.pingIntervalMs);
    },
    // Loops until it has enqueued something: a pull that returns empty-handed may not be called again.
    async pull(controller) {
      for (;;) {
        // The metered stream ends its own failures with an error event; should it still break, the message ends in one here.
        const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        const events = done
          ? translator.end(options.requestId)
          : sse.push(decoder.decode(value, { stream: true })).flatMap(({ event }) => translate(translator, event.data, options.requestId));
        if (events.length > 0) controller.enqueue(bytesOf(events));
        if (done) {
          clearInterval(pinger);
          controller.close();
          return;
        }
        if (events.length > 0) return;
      }
    },
    // The client went away: the metered stream books the call (it drains the upstream for its usage).
    cancel(reason) {
      clearInterval(pinger);
      return reader.cancel(reason);
    },
  });
}

/** One event of the metered stream: a chunk, the `faucet` event, an error, or `[DONE]`. */
function translate(translator: MessagesStreamTranslator, data: string, requestId: string): MessagesStreamEvent[] {
  if (data === '[DONE]') return translator.done();
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return translator.error('upstream_error', 'The gateway streamed an event that is not JSON.', requestId);
  }
  const event = value as { faucet?: FaucetObject; error?: { code?: unknown; message?: unknown } };
  if (event.error !== undefined) {
    const message = typeof event.error.message === 'string' ? event.error.message : 'The upstream stream failed.';
    return translator.error(String(event.error.code), message, requestId);
  }
  if (event.faucet !== undefined) {
    translator.faucet(event.faucet);
    return [];
  }
  return translator.chunk(value as ChatCompletionChunk);
}
