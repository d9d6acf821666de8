/**
 * A stateful translator from chat chunks to the typed Responses events (`response.created` …
 * `response.completed`), numbered by `sequence_number`. It only reshapes what the client sees: the
 * metered stream still counts and settles the chat chunks (`responses-event-stream.ts` puts this after it).
 *
 * Items open as their first delta arrives. A message item closes when a tool call starts (text after
 * it opens a new message item); tool call items stay open to the end, as chat may interleave the
 * arguments of parallel calls. A tool call opens only once its id and name are known: the official
 * SDK refuses a `function_call` item without a `call_id`.
 */
import type { FaucetObject } from '../../metering/faucet-object.ts';
import type { ChatCompletionChunk, ChatUsage } from '../../openai/chat-schemas.ts';
import type { ResponsesRequest } from './responses-request.ts';
import {
  endOf,
  type FunctionCallOutput,
  type ItemStatus,
  type MessageOutput,
  type OutputItem,
  type OutputRefusal,
  type OutputText,
  outputItemId,
  type ResponseError,
  type ResponseIds,
  type ResponseObject,
  responseObject,
  responsesUsageOf,
} from './responses-response.ts';

interface ItemLocation {
  item_id: string;
  output_index: number;
}

interface PartLocation extends ItemLocation {
  content_index: number;
}

export type ResponsesStreamEvent = { sequence_number: number } & (
  | {
      type: 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete' | 'response.failed';
      response: ResponseObject;
    }
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: OutputItem }
  | ({ type: 'response.content_part.added' | 'response.content_part.done'; part: OutputText | OutputRefusal } & PartLocation)
  | ({ type: 'response.output_text.delta'; delta: string; logprobs: [] } & PartLocation)
  | ({ type: 'response.output_text.done'; text: string; logprobs: [] } & PartLocation)
  | ({ type: 'response.refusal.delta'; delta: string } & PartLocation)
  | ({ type: 'response.refusal.done'; refusal: string } & PartLocation)
  | ({ type: 'response.function_call_arguments.delta'; delta: string } & ItemLocation)
  | ({ type: 'response.function_call_arguments.done'; arguments: string; name: string } & ItemLocation)
  | { type: 'error'; code: string; message: string; param: null; request_id?: string }
);

type Unnumbered<Event> = Event extends unknown ? Omit<Event, 'sequence_number'> : never;

interface MessageState {
  item: MessageOutput;
  outputIndex: number;
  /** Whether the last content part is still open. */
  partOpen: boolean;
}

interface CallState {
  item: FunctionCallOutput;
  /** Set once the item is announced (its id and name known). */
  outputIndex: number | undefined;
  open: boolean;
}

/** A failure to report: a Faucet error code (DESIGN §4) and its message. */
export interface StreamFailure {
  code: string;
  message: string;
  request_id?: string;
}

/** A failure as a failed response's `error`, in OpenAI's codes. */
export function responseErrorOf(failure: StreamFailure): ResponseError {
  return { code: failure.code === 'rate_limited' ? 'rate_limit_exceeded' : 'server_error', message: failure.message };
}

/** The `error` event that follows `response.failed`: Faucet's code and the request id. */
export function errorEventOf(failure: StreamFailure) {
  return {
    type: 'error' as const,
    code: failure.code,
    message: failure.message,
    param: null,
    ...(failure.request_id === undefined ? {} : { request_id: failure.request_id }),
  };
}

export class ResponsesStreamTranslator {
  private sequence = 0;
  private readonly output: Array<MessageState | CallState> = [];
  private message: MessageState | undefined;
  /** By the chat tool call's `index`. */
  private readonly calls = new Map<number, CallState>();
  private model: string;
  private finishReason: string | null = null;
  private usage: ChatUsage | null = null;
  private ended = false;

  constructor(
    private readonly request: ResponsesRequest,
    private readonly ids: ResponseIds,
  ) {
    this.model = request.model;
  }

  /** `response.created` and `response.in_progress`: sent once the upstream accepted the call. */
  start(): ResponsesStreamEvent[] {
    const response = this.snapshot('in_progress');
    return [this.number({ type: 'response.created', response }), this.number({ type: 'response.in_progress', response })];
  }

  push(chunk: ChatCompletionChunk): ResponsesStreamEvent[] {
    if (this.ended) return [];
    const events: ResponsesStreamEvent[] = [];
    this.model = chunk.model || this.model;
    if (chunk.usage != null) this.usage = chunk.usage;
    // Faucet meters one choice per call (`n` is 1).
    const choice = chunk.choices.find((candidate) => candidate.index === 0);
    if (choice === undefined) return events;
    if (choice.delta.content) this.textDelta('output_text', choice.delta.content, events);
    if (choice.delta.refusal) this.textDelta('refusal', choice.delta.refusal, events);
    for (const delta of choice.delta.tool_calls ?? []) {
      let call = this.calls.get(delta.index);
      if (call === undefined) {
        call = {
          item: { type: 'function_call', id: '', call_id: '', name: '', arguments: '', status: 'in_progress' },
          outputIndex: undefined,
          open: false,
        };
        this.calls.set(delta.index, call);
      }
      // Some providers repeat the id and name on every delta: the first ones are kept.
      if (delta.id && call.item.call_id === '') call.item.call_id = delta.id;
      if (delta.function?.name && call.item.name === '') call.item.name = delta.function.name;
      const argumentsDelta = delta.function?.arguments ?? '';
      call.item.arguments += argumentsDelta;
      if (call.outputIndex === undefined) {
        if (call.item.call_id !== '' && call.item.name !== '') this.openCall(call, events);
      } else if (argumentsDelta !== '') {
        events.push(this.number({ type: 'response.function_call_arguments.delta', ...this.itemLocation(call), delta: argumentsDelta }));
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return events;
  }

  /** The upstream ended: every open item is closed, then `response.completed` (or `.incomplete` at the token limit). */
  finish(faucet?: FaucetObject): ResponsesStreamEvent[] {
    if (this.ended) return [];
    this.ended = true;
    const events: ResponsesStreamEvent[] = [];
    const end = endOf(this.finishReason);
    const status: ItemStatus = end.status === 'incomplete' ? 'incomplete' : 'completed';
    for (const [index, call] of this.calls) {
      if (call.outputIndex !== undefined) continue;
      // Never named by the provider: an id of the call's own, so the client can still answer it.
      if (call.item.call_id === '') call.item.call_id = `call_${this.ids.callId.replaceAll('-', '')}_${index}`;
      this.openCall(call, events);
    }
    this.closeMessage(events, status);
    for (const state of this.output) {
      if ('open' in state && state.open) this.closeCall(state, events, status);
    }
    const response = this.snapshot(end.status, {
      incompleteReason: end.status === 'incomplete' ? end.reason : undefined,
      usage: responsesUsageOf(this.usage, faucet),
      faucet,
    });
    events.push(this.number({ type: end.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response }));
    return events;
  }

  /** The upstream (or the settlement) failed: `response.failed` with what was produced, then an `error` event. */
  fail(failure: StreamFailure, faucet?: FaucetObject): ResponsesStreamEvent[] {
    if (this.ended) return [];
    this.ended = true;
    for (const state of this.output) state.item.status = state.item.status === 'in_progress' ? 'incomplete' : state.item.status;
    const response = this.snapshot('failed', { error: responseErrorOf(failure), usage: responsesUsageOf(this.usage, faucet), faucet });
    return [this.number({ type: 'response.failed', response }), this.number(errorEventOf(failure))];
  }

  private textDelta(kind: 'output_text' | 'refusal', delta: string, events: ResponsesStreamEvent[]): void {
    const message = this.message ?? this.openMessage(events);
    const last = message.item.content.at(-1);
    if (!message.partOpen || last?.type !== kind) {
      this.closePart(message, events);
      const part: OutputText | OutputRefusal =
        kind === 'output_text' ? { type: 'output_text', text: '', annotations: [], logprobs: [] } : { type: 'refusal', refusal: '' };
      message.item.content.push(part);
      message.partOpen = true;
      events.push(this.number({ type: 'response.content_part.added', ...this.partLocation(message), part: structuredClone(part) }));
    }
    const part = message.item.content.at(-1)!;
    const location = this.partLocation(message);
    if (part.type === 'output_text') {
      part.text += delta;
      events.push(this.number({ type: 'response.output_text.delta', ...location, delta, logprobs: [] }));
    } else {
      part.refusal += delta;
      events.push(this.number({ type: 'response.refusal.delta', ...location, delta }));
    }
  }

  private openMessage(events: ResponsesStreamEvent[]): MessageState {
    const outputIndex = this.output.length;
    const message: MessageState = {
      item: {
        type: 'message',
        id: outputItemId('msg', this.ids.callId, outputIndex),
        role: 'assistant',
        status: 'in_progress',
        content: [],
      },
      outputIndex,
      partOpen: false,
    };
    this.output.push(message);
    this.message = message;
    events.push(this.number({ type: 'response.output_item.added', output_index: outputIndex, item: structuredClone(message.item) }));
    return message;
  }

  private closePart(message: MessageState, events: ResponsesStreamEvent[]): void {
    const part = message.item.content.at(-1);
    if (!message.partOpen || part === undefined) return;
    message.partOpen = false;
    const location = this.partLocation(message);
    events.push(
      part.type === 'output_text'
        ? this.number({ type: 'response.output_text.done', ...location, text: part.text, logprobs: [] })
        : this.number({ type: 'response.refusal.done', ...location, refusal: part.refusal }),
    );
    events.push(this.number({ type: 'response.content_part.done', ...location, part: structuredClone(part) }));
  }

  private closeMessage(events: ResponsesStreamEvent[], status: ItemStatus): void {
    const message = this.message;
    if (message === undefined) return;
    this.message = undefined;
    this.closePart(message, events);
    message.item.status = status;
    events.push(this.number({ type: 'response.output_item.done', output_index: message.outputIndex, item: structuredClone(message.item) }));
  }

  private openCall(call: CallState, events: ResponsesStreamEvent[]): void {
    // Text before a tool call is finished: a chat turn does not go back to it.
    this.closeMessage(events, 'completed');
    const outputIndex = this.output.length;
    call.outputIndex = outputIndex;
    call.open = true;
    call.item.id = outputItemId('fc', this.ids.callId, outputIndex);
    this.output.push(call);
    events.push(
      this.number({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...call.item, arguments: '', status: 'in_progress' },
      }),
    );
    if (call.item.arguments !== '') {
      events.push(this.number({ type: 'response.function_call_arguments.delta', ...this.itemLocation(call), delta: call.item.arguments }));
    }
  }

  private closeCall(call: CallState, events: ResponsesStreamEvent[], status: ItemStatus): void {
    call.open = false;
    call.item.status = status;
    const location = this.itemLocation(call);
    events.push(
      this.number({ type: 'response.function_call_arguments.done', ...location, arguments: call.item.arguments, name: call.item.name }),
    );
    events.push(this.number({ type: 'response.output_item.done', output_index: location.output_index, item: structuredClone(call.item) }));
  }

  private itemLocation(state: MessageState | CallState): ItemLocation {
    return { item_id: state.item.id, output_index: state.outputIndex ?? 0 };
  }

  private partLocation(message: MessageState): PartLocation {
    return { ...this.itemLocation(message), content_index: message.item.content.length - 1 };
  }

  private snapshot(
    status: ResponseObject['status'],
    extra: Pick<Parameters<typeof responseObject>[0], 'incompleteReason' | 'error' | 'usage' | 'faucet'> = {},
  ) {
    return responseObject({
      request: this.request,
      ids: this.ids,
      model: this.model,
      status,
      output: this.output.map((state) => structuredClone(state.item)),
      ...extra,
    });
  }

  private number(event: Unnumbered<ResponsesStreamEvent>): ResponsesStreamEvent {
    return { ...event, sequence_number: this.sequence++ } as ResponsesStreamEvent;
  }
}
