/** Anthropic Messages response → OpenAI chat completion, usage and thinking included. */
import { z } from 'zod';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletion, ChatUsage, ThinkingBlock } from '../../openai/chat-schemas.ts';

const count = z.number().int().nonnegative().nullish();

export const anthropicUsageSchema = z.looseObject({
  input_tokens: count,
  output_tokens: count,
  cache_creation_input_tokens: count,
  cache_read_input_tokens: count,
  /** The cache writes by lifetime; their sum is `cache_creation_input_tokens`. */
  cache_creation: z.looseObject({ ephemeral_5m_input_tokens: count, ephemeral_1h_input_tokens: count }).nullish(),
});

const anthropicMessageSchema = z.looseObject({
  id: z.string(),
  model: z.string(),
  content: z.array(
    z.looseObject({
      type: z.string(),
      text: z.string().optional(),
      id: z.string().optional(),
      name: z.string().optional(),
      input: z.unknown().optional(),
      thinking: z.string().optional(),
      signature: z.string().optional(),
      data: z.string().optional(),
    }),
  ),
  stop_reason: z.string().nullish(),
  usage: anthropicUsageSchema,
});

export type AnthropicUsage = z.infer<typeof anthropicUsageSchema>;

const finishReasons: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function openAiFinishReason(stopReason: string | null | undefined): string | null {
  if (stopReason == null) return null;
  return finishReasons[stopReason] ?? 'stop';
}

/**
 * The usage, or null when Anthropic (or a server speaking its protocol) reported no input or no
 * output count: an absent count is not a zero, so the call is billed at its bound, marked estimated.
 */
export function reportedUsage(usage: AnthropicUsage): ChatUsage | null {
  if (typeof usage.input_tokens !== 'number' || typeof usage.output_tokens !== 'number') return null;
  return openAiUsage(usage);
}

/**
 * Anthropic counts cache reads and writes apart from `input_tokens`; OpenAI's prompt count includes
 * them, so they are added in and named in the details (`cache_write_tokens`, every write, and
 * `cache_write_1h_tokens`, the one-hour part, are Faucet's names: OpenAI has no cache writes). The
 * one-hour part is named only when Anthropic split the writes (`cache_creation`); it never exceeds the
 * writes. Thinking is part of `output_tokens` and not reported apart.
 */
function openAiUsage(usage: AnthropicUsage): ChatUsage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const split = usage.cache_creation;
  const cacheWrite =
    usage.cache_creation_input_tokens ??
    (split == null ? 0 : (split.ephemeral_5m_input_tokens ?? 0) + (split.ephemeral_1h_input_tokens ?? 0));
  const promptTokens = (usage.input_tokens ?? 0) + cacheWrite + cacheRead;
  const completionTokens = usage.output_tokens ?? 0;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: {
      cached_tokens: cacheRead,
      cache_write_tokens: cacheWrite,
      ...(split == null ? {} : { cache_write_1h_tokens: Math.min(split.ephemeral_1h_input_tokens ?? 0, cacheWrite) }),
    },
  };
}

export function fromAnthropicResponse(value: unknown, created: number): ChatCompletion {
  const parsed = anthropicMessageSchema.safeParse(value);
  if (!parsed.success) throw new FaucetError('upstream_error', 'Anthropic answered with an unexpected message shape.');
  const message = parsed.data;
  const text = message.content
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('');
  const toolCalls = message.content
    .filter((block) => block.type === 'tool_use')
    .map((block) => ({
      id: block.id ?? '',
      type: 'function',
      function: { name: block.name ?? '', arguments: JSON.stringify(block.input ?? {}) },
    }));
  const thinkingBlocks = message.content.flatMap((block): ThinkingBlock[] => {
    if (block.type === 'thinking') return [{ type: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' }];
    if (block.type === 'redacted_thinking') return [{ type: 'redacted_thinking', data: block.data ?? '' }];
    return [];
  });
  const reasoning = thinkingBlocks.map((block) => (block.type === 'thinking' ? block.thinking : '')).join('');
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model: message.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && toolCalls.length > 0 ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          // As LiteLLM carries them: the text for any client, the blocks (signatures) to send back.
          ...(reasoning === '' ? {} : { reasoning_content: reasoning }),
          ...(thinkingBlocks.length > 0 ? { thinking_blocks: thinkingBlocks } : {}),
        },
        finish_reason: openAiFinishReason(message.stop_reason),
      },
    ],
    usage: reportedUsage(message.usage),
  };
}
