/**
 * A call the client did not ask to stream, read from its upstream as a stream so that it is held for
 * a quota that grows with the answer (docs/quota.md): the metered stream's SSE (chat chunks with the
 * usage chunk, its `faucet.usage` event, then `[DONE]` or an error envelope) gathered back into the
 * one completion the client asked for. The metered stream counts, asks for steps, cuts and settles
 * as it does for a streamed call; this only listens.
 */
import { type ErrorCode, errorStatus, FaucetError } from '#shared/wire/errors.ts';
import { parseSse } from '#shared/wire/sse.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatUsage } from '../openai/chat-schemas.ts';

type Choice = ChatCompletion['choices'][number];
type Message = Choice['message'];
type ToolCall = NonNullable<Message['tool_calls']>[number];
type ChunkChoice = ChatCompletionChunk['choices'][number];

interface OpenChoice {
  role: string;
  content: string | null;
  refusal: string | null;
  reasoning: string | null;
  /** Reasoning text since the last thinking block closed: a streamed block's signature closes it. */
  pendingThinking: string;
  thinkingBlocks: Array<{ type: string } & Record<string, unknown>>;
  toolCalls: Map<number, ToolCall>;
  logprobs: { content: unknown[]; refusal: unknown[] } | null;
  finishReason: string | null;
}

/** Chat completion chunks folded into the completion a call not streamed answers with, as OpenAI's clients fold them. */
export class CompletionBuilder {
  /** The answer's id, time and model (the first chunk's), and any other field the chunks carry (`system_fingerprint`, …). */
  private head: { id: string; created: number; model: string; [field: string]: unknown } | null = null;
  private readonly choices = new Map<number, OpenChoice>();
  private usage: ChatUsage | null = null;

  push(chunk: ChatCompletionChunk): void {
    const { choices, usage, object: _object, id, created, model, ...rest } = chunk;
    this.head = { ...this.head, ...rest, id: this.head?.id ?? id, created: this.head?.created ?? created, model };
    if (usage != null) this.usage = usage;
    for (const choice of choices) this.pushChoice(choice);
  }

  completion(): ChatCompletion {
    if (this.head === null) throw new FaucetError('upstream_error', 'The upstream stream ended before it sent an answer.');
    const choices = [...this.choices.entries()].sort(([a], [b]) => a - b).map(([index, open]) => finishedChoice(index, open));
    return { ...this.head, object: 'chat.completion', choices, ...(this.usage === null ? {} : { usage: this.usage }) };
  }

  private pushChoice(choice: ChunkChoice): void {
    const open = this.choices.get(choice.index) ?? newChoice();
    this.choices.set(choice.index, open);
    const { delta } = choice;
    if (delta.role != null) open.role = delta.role;
    if (delta.content != null) open.content = (open.content ?? '') + delta.content;
    if (delta.refusal != null) open.refusal = (open.refusal ?? '') + delta.refusal;
    if (delta.reasoning_content != null) {
      open.reasoning = (open.reasoning ?? '') + delta.reasoning_content;
      open.pendingThinking += delta.reasoning_content;
    }
    for (const block of delta.thinking_blocks ?? []) {
      // A thinking block streams its text as reasoning, then its signature with the text empty.
      const text = typeof block.thinking === 'string' && block.thinking !== '' ? block.thinking : open.pendingThinking;
      open.thinkingBlocks.push(block.type === 'thinking' ? { ...block, thinking: text } : block);
      if (block.type === 'thinking') open.pendingThinking = '';
    }
    for (const call of delta.tool_calls ?? []) {
      const known = open.toolCalls.get(call.index) ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
      if (call.id) known.id = call.id;
      if (call.type) known.type = call.type;
      if (call.function?.name) known.function.name = call.function.name;
      if (call.function?.arguments) known.function.arguments += call.function.arguments;
      open.toolCalls.set(call.index, known);
    }
    const logprobs = (choice as { logprobs?: { content?: unknown[] | null; refusal?: unknown[] | null } | null }).logprobs;
    if (logprobs != null) {
      open.logprobs ??= { content: [], refusal: [] };
      open.logprobs.content.push(...(logprobs.content ?? []));
      open.logprobs.refusal.push(...(logprobs.refusal ?? []));
    }
    if (choice.finish_reason != null) open.finishReason = choice.finish_reason;
  }
}

function newChoice(): OpenChoice {
  return {
    role: 'assistant',
    content: null,
    refusal: null,
    reasoning: null,
    pendingThinking: '',
    thinkingBlocks: [],
    toolCalls: new Map(),
    logprobs: null,
    finishReason: null,
  };
}

function finishedChoice(index: number, open: OpenChoice): Choice {
  const toolCalls = [...open.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  const message: Message = {
    role: open.role,
    content: open.content,
    ...(open.refusal === null ? {} : { refusal: open.refusal }),
    ...(open.reasoning === null ? {} : { reasoning_content: open.reasoning }),
    ...(open.thinkingBlocks.length === 0 ? {} : { thinking_blocks: open.thinkingBlocks }),
    ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
  };
  return { index, message, finish_reason: open.finishReason, ...(open.logprobs === null ? {} : { logprobs: open.logprobs }) };
}

/**
 * The metered stream read to its end: the completion and its `faucet` object (with `cut_reason` when a
 * quota step was refused). An error envelope is thrown as the error it names; the metered stream has
 * booked what the provider bills by then.
 */
export async function bufferedAnswer(
  meteredSse: ReadableStream<Uint8Array>,
): Promise<{ completion: ChatCompletion; faucet: FaucetObject }> {
  const builder = new CompletionBuilder();
  let faucet: FaucetObject | null = null;
  for await (const { data } of parseSse(meteredSse)) {
    if (data === '[DONE]') {
      if (faucet === null) break;
      return { completion: builder.completion(), faucet };
    }
    const event = JSON.parse(data) as Record<string, unknown>;
    if (event.object === 'faucet.usage') {
      faucet = event.faucet as FaucetObject;
      continue;
    }
    const error = event.error as { code?: string; message?: string } | undefined;
    if (error != null) {
      const code = typeof error.code === 'string' && Object.hasOwn(errorStatus, error.code) ? (error.code as ErrorCode) : 'upstream_error';
      throw new FaucetError(code, error.message ?? 'The upstream stream failed.');
    }
    builder.push(event as ChatCompletionChunk);
  }
  throw new FaucetError('upstream_error', 'The upstream stream ended early.');
}
