/**
 * The usage of OpenAI-compatible upstreams, brought to OpenAI's convention (metering/metered-usage.ts):
 * - DeepSeek reports cache hits as `prompt_cache_hit_tokens` (and misses as `prompt_cache_miss_tokens`,
 *   which add up to `prompt_tokens`): the hits become `prompt_tokens_details.cached_tokens`;
 * - xAI leaves reasoning out of `completion_tokens` (its `total_tokens` = prompt + completion +
 *   reasoning) and bills it as output: where the dialect says so, the reasoning is added back;
 * - Groq puts a stream's usage in `x_groq.usage` of the last chunk: it is taken from there when the
 *   chunk has no `usage` of its own.
 * Everything else OpenAI-like (Mistral, Together, Fireworks, OpenRouter, Azure) already is the convention.
 */
import type { OpenAiDialect } from '#shared/providers/provider-catalog.ts';
import { usageSchema, type ChatCompletionChunk, type ChatUsage } from '../../openai/chat-schemas.ts';

export function normalizeUsage(usage: ChatUsage | null | undefined, dialect: OpenAiDialect): ChatUsage | null | undefined {
  if (usage == null) return usage;
  let normalized = usage;
  const cacheHits = usage.prompt_cache_hit_tokens;
  if (
    typeof cacheHits === 'number' &&
    Number.isSafeInteger(cacheHits) &&
    cacheHits >= 0 &&
    usage.prompt_tokens_details?.cached_tokens == null
  ) {
    normalized = { ...normalized, prompt_tokens_details: { ...normalized.prompt_tokens_details, cached_tokens: cacheHits } };
  }
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  if (!dialect.reasoningInCompletion && reasoning > 0) {
    normalized = { ...normalized, completion_tokens: normalized.completion_tokens + reasoning };
  }
  return normalized;
}

/** A stream chunk with its usage in the convention; Groq's `x_groq.usage` taken up where it is the only usage. */
export function normalizeChunk(chunk: ChatCompletionChunk, dialect: OpenAiDialect): ChatCompletionChunk {
  let usage = chunk.usage;
  if (usage == null) {
    const groq = (chunk.x_groq as { usage?: unknown } | undefined)?.usage;
    const parsed = groq === undefined ? undefined : usageSchema.safeParse(groq);
    if (parsed?.success) usage = parsed.data;
  }
  if (usage == null) return chunk;
  return { ...chunk, usage: normalizeUsage(usage, dialect) };
}
