/**
 * Token estimates for servers that report no usage: about four characters per token (the usual
 * rule of thumb for English with BPE vocabularies) plus OpenAI's per-message framing overhead.
 * Usage built from these is always marked `estimated: true`.
 */
const charactersPerToken = 4;
const tokensPerMessage = 4;
const tokensPerReply = 2;

export function estimateTextTokens(characters: number): number {
  return Math.ceil(characters / charactersPerToken);
}

export function estimateInputTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = tokensPerReply;
  for (const message of messages) {
    tokens += tokensPerMessage + estimateTextTokens(contentLength((message as { content?: unknown })?.content));
  }
  return tokens;
}

/** Characters of text in a message content: a string or an array of `{ type: 'text', text }` parts. */
export function contentLength(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let length = 0;
  for (const part of content) {
    const text = (part as { text?: unknown })?.text;
    if (typeof text === 'string') length += text.length;
  }
  return length;
}

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
