/** Token counts of one call: the provider's when it reported them, else Faucet's estimate, marked as such. */
import type { ChatUsage } from '../openai/chat-schemas.ts';

export interface MeteredUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  estimated: boolean;
}

export function meteredUsage(
  reported: ChatUsage | null | undefined,
  estimate: () => { inputTokens: number; outputTokens: number },
): MeteredUsage {
  if (reported != null) {
    const cached = reported.prompt_tokens_details?.cached_tokens ?? 0;
    return {
      inputTokens: reported.prompt_tokens,
      outputTokens: reported.completion_tokens,
      cachedInputTokens: Math.min(cached, reported.prompt_tokens),
      estimated: false,
    };
  }
  return { ...estimate(), cachedInputTokens: 0, estimated: true };
}
