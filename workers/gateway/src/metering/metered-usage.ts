/**
 * Token counts of one call, by class (workers/shared/providers/token-usage.ts): the provider's when it
 * reported them, else Faucet's estimate, marked as such.
 *
 * Adapters hand every provider's usage over in one convention, OpenAI's (what the client sees):
 * `prompt_tokens` counts all input, `completion_tokens` all output, and the details name the parts —
 * `cached_tokens` (cache reads), `cache_write_tokens` (Faucet's name for cache writes, which OpenAI's
 * shape lacks: every write, as Anthropic's `cache_creation_input_tokens`), `cache_write_1h_tokens`
 * (the part of those written for one hour, Anthropic's `ephemeral_1h_input_tokens`), `audio_tokens`,
 * `reasoning_tokens`. This file is the one mapping from that convention to the token classes: the
 * one-hour writes are their own class, the rest of the writes five-minute ones. A detail larger than
 * what is left of its total is clamped, so the classes always add up to the totals the provider
 * reported.
 */
import { tokenUsage, totalInputTokens, totalOutputTokens, type TokenUsage } from '#shared/providers/token-usage.ts';
import type { ChatUsage } from '../openai/chat-schemas.ts';

export interface MeteredUsage {
  tokens: TokenUsage;
  estimated: boolean;
}

export function tokenUsageFromOpenAi(reported: ChatUsage): TokenUsage {
  const prompt = reported.prompt_tokens_details;
  const completion = reported.completion_tokens_details;
  let inputLeft = reported.prompt_tokens;
  const take = (count: number | null | undefined): number => {
    const taken = Math.min(count ?? 0, inputLeft);
    inputLeft -= taken;
    return taken;
  };
  const cachedInput = take(prompt?.cached_tokens);
  const cacheWrites = take(prompt?.cache_write_tokens);
  const cacheWrite1h = Math.min(prompt?.cache_write_1h_tokens ?? 0, cacheWrites);
  const audioInput = take(prompt?.audio_tokens);
  const audioOutput = Math.min(completion?.audio_tokens ?? 0, reported.completion_tokens);
  const output = reported.completion_tokens - audioOutput;
  return {
    input: inputLeft,
    cachedInput,
    cacheWrite: cacheWrites - cacheWrite1h,
    cacheWrite1h,
    audioInput,
    output,
    reasoning: Math.min(completion?.reasoning_tokens ?? 0, output),
    audioOutput,
  };
}

export function meteredUsage(
  reported: ChatUsage | null | undefined,
  estimate: () => { inputTokens: number; outputTokens: number },
): MeteredUsage {
  if (reported != null) return { tokens: tokenUsageFromOpenAi(reported), estimated: false };
  const { inputTokens, outputTokens } = estimate();
  return { tokens: tokenUsage({ input: inputTokens, output: outputTokens }), estimated: true };
}

/** An estimate at the given bounds (input billed at the plain price, output as text). */
export function estimatedUsage(inputTokens: number, outputTokens: number): MeteredUsage {
  return { tokens: tokenUsage({ input: inputTokens, output: outputTokens }), estimated: true };
}

/**
 * The token counts rating takes (`UsageToRate` of workers/shared/rating): whole input and output
 * with their parts named. A rating that does not price a part yet counts it at its whole's price.
 */
export function ratingTokens(usage: MeteredUsage) {
  const { tokens } = usage;
  return {
    inputTokens: totalInputTokens(tokens),
    outputTokens: totalOutputTokens(tokens),
    cachedInputTokens: tokens.cachedInput,
    cacheWriteTokens: tokens.cacheWrite,
    cacheWrite1hTokens: tokens.cacheWrite1h,
    audioInputTokens: tokens.audioInput,
    audioOutputTokens: tokens.audioOutput,
    reasoningTokens: tokens.reasoning,
    estimated: usage.estimated,
  };
}
