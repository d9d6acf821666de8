/**
 * Anthropic's streaming events → OpenAI chunks. `message_start` opens the assistant turn and
 * reports the input tokens; text and tool-input deltas become content and tool-call deltas,
 * thinking deltas `reasoning_content` and a thinking block's signature (or a redacted block)
 * `thinking_blocks`, as LiteLLM streams them;
 * `message_delta` carries the stop reason and the output tokens; at `message_stop` a final chunk
 * with empty `choices` and the whole `usage` follows, as OpenAI sends it with `include_usage`.
 */
import { z } from 'zod';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { parseSse } from '#shared/wire/sse.ts';
import { anthropicUsageSchema, openAiFinishReason, reportedUsage, type AnthropicUsage } from './from-anthropic-response.ts';
import { upstreamEventJson } from '../upstream-event.ts';

const eventSchema = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('message_start'),
    message: z.looseObject({ id: z.string(), model: z.string(), usage: anthropicUsageSchema.optional() }),
  }),
  z.looseObject({
    type: z.literal('content_block_start'),
    index: z.number().int(),
    content_block: z.looseObject({
      type: z.string(),
      id: z.string().optional(),
      name: z.string().optional(),
      text: z.string().optional(),
      thinking: z.string().optional(),
      data: z.string().optional(),
    }),
  }),
  z.looseObject({
    type: z.literal('content_block_delta'),
    index: z.number().int(),
    delta: z.looseObject({
      type: z.string(),
      text: z.string().optional(),
      partial_json: z.string().optional(),
      thinking: z.string().optional(),
      signature: z.string().optional(),
    }),
  }),
  z.looseObject({ type: z.literal('content_block_stop') }),
  z.looseObject({
    type: z.literal('message_delta'),
    delta: z.looseObject({ stop_reason: z.string().nullish() }),
    usage: anthropicUsageSchema.optional(),
  }),
  z.looseObject({ type: z.literal('message_stop') }),
  z.looseObject({ type: z.literal('ping') }),
  z.looseObject({ type: z.literal('error') }),
]);

export async function* chunksFromAnthropicSse(body: ReadableStream<Uint8Array>, created: number): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let model = '';
  const usage: AnthropicUsage = {};
  /** Anthropic numbers content blocks; OpenAI numbers tool calls only. */
  const toolIndexByBlock = new Map<number, number>();
  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });

  for await (const raw of parseSse(body)) {
    const value = upstreamEventJson(raw.data, 'Anthropic');
    const parsed = eventSchema.safeParse(value);
    if (!parsed.success) continue; // Event types added later by Anthropic are skipped, as its docs ask.
    const event = parsed.data;
    switch (event.type) {
      case 'message_start':
        id = event.message.id;
        model = event.message.model;
        Object.assign(usage, definedFields(event.message.usage ?? {}));
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          const toolIndex = toolIndexByBlock.size;
          toolIndexByBlock.set(event.index, toolIndex);
          yield chunk({
            tool_calls: [
              {
                index: toolIndex,
                id: event.content_block.id ?? '',
                type: 'function',
                function: { name: event.content_block.name ?? '', arguments: '' },
              },
            ],
          });
        } else if (event.content_block.type === 'text' && event.content_block.text) {
          yield chunk({ content: event.content_block.text });
        } else if (event.content_block.type === 'thinking' && event.content_block.thinking) {
          yield chunk({ reasoning_content: event.content_block.thinking });
        } else if (event.content_block.type === 'redacted_thinking') {
          yield chunk({ thinking_blocks: [{ type: 'redacted_thinking', data: event.content_block.data ?? '' }] });
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta' && event.delta.text !== undefined) {
          yield chunk({ content: event.delta.text });
        } else if (event.delta.type === 'thinking_delta' && event.delta.thinking !== undefined) {
          yield chunk({ reasoning_content: event.delta.thinking });
        } else if (event.delta.type === 'signature_delta' && event.delta.signature !== undefined) {
          // The thinking block's signature, sent when the block ends: the client sends it back with the block.
          yield chunk({ thinking_blocks: [{ type: 'thinking', thinking: '', signature: event.delta.signature }] });
        } else if (event.delta.type === 'input_json_delta' && event.delta.partial_json !== undefined) {
          const toolIndex = toolIndexByBlock.get(event.index);
          if (toolIndex !== undefined)
            yield chunk({ tool_calls: [{ index: toolIndex, function: { arguments: event.delta.partial_json } }] });
        }
        break;
      case 'message_delta':
        Object.assign(usage, definedFields(event.usage ?? {}));
        if (event.delta.stop_reason != null) yield chunk({}, openAiFinishReason(event.delta.stop_reason));
        break;
      case 'message_stop':
        // Without both counts nothing is reported: the metered stream bills the bound, not a zero.
        yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: reportedUsage(usage) };
        return;
      case 'error':
        throw new FaucetError('upstream_error', 'Anthropic reported an error mid-stream.');
      default:
        break;
    }
  }
  throw new FaucetError('upstream_error', 'Anthropic ended the stream before message_stop.');
}

/**
 * The merge rule of Anthropic's streamed usage: `message_start` carries the input counts (and an
 * early output count, and the cache writes split by lifetime in `cache_creation`), `message_delta`
 * the final output count and sometimes input counts again. Each count is cumulative, never an
 * increment, so for every field the last value reported wins (the `cache_creation` split as a
 * whole); fields a later event leaves out or sends as null keep the earlier value.
 */
function definedFields(usage: AnthropicUsage): AnthropicUsage {
  return Object.fromEntries(
    Object.entries(usage).filter(([key, value]) => typeof value === 'number' || (key === 'cache_creation' && value != null)),
  );
}
