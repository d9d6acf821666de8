/** Estimates are the wire contract's (shared with the SDK); usage as the upstream reported it is read here. */
export { contentLength, estimateInputTokens, estimateTextTokens } from '../../../workers/shared/wire/estimate-tokens';

export interface TokenCounts {
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
}

/** Reads an OpenAI `usage` object; undefined unless both counts are non-negative integers. */
export function usageFrom(usage: unknown): Omit<TokenCounts, 'estimated'> | undefined {
  const prompt = (usage as { prompt_tokens?: unknown })?.prompt_tokens;
  const completion = (usage as { completion_tokens?: unknown })?.completion_tokens;
  if (Number.isSafeInteger(prompt) && Number.isSafeInteger(completion) && (prompt as number) >= 0 && (completion as number) >= 0) {
    return { input_tokens: prompt as number, output_tokens: completion as number };
  }
  return undefined;
}
